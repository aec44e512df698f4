import { randomUUID } from 'node:crypto';
import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Subjects } from '@loyalty/contracts';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { connectAs } from '../../../test/support/nats.ts';

/**
 * Mail that must not go where it goes by default: sandbox tenants' mail without SANDBOX_SMTP_URL
 * (here unset, SMTP_URL is the sink) is not sent at all; member- and staff-supplied text reaches
 * a mail flattened to one line and bounded.
 */
let sys: TestSystem;
let nc: NatsConnection;
let n = 0;
const person = () => {
  n += 1;
  return {
    name: `Mail ${n}`,
    email: `mail${n}.${Date.now()}@example.com`,
    phone: `+1444${String(1_000_000 + n * 7919 + (Date.now() % 1000)).slice(-7)}`,
  };
};

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity'], env: { SANDBOX_SMTP_URL: '' } });
  nc = await connectAs('admin', { url: sys.env.NATS_URL });
});
afterAll(async () => {
  await nc?.drain();
  await sys?.stop();
});

it("sends no sandbox tenant's mail without SANDBOX_SMTP_URL (never to the live server); live mail goes", async () => {
  const sandbox = apiClient(sys.url, await sys.tenant({ sandbox: true }));
  const live = apiClient(sys.url, await sys.tenant({ sandbox: false }));
  const s = person();
  const r = await sandbox('POST', '/api/v1/auth/member/register', { body: s });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.data!.otp_code).toMatch(/^\d{6}$/); // the sandbox still gets its code, in the answer
  const l = person();
  expect((await live('POST', '/api/v1/auth/member/register', { body: l })).status).toBe(200);
  await sys.mail.codeFor(l.email); // the live code arrived, after the sandbox one would have
  expect(sys.mail.messages.filter((m) => m.to.includes(s.email))).toEqual([]);
});

it('flattens and bounds names, reward names and staff notes in code mails and notifications', async () => {
  const t = await sys.tenant({ sandbox: false });
  const live = apiClient(sys.url, t);
  const p = person();
  const reg = await live('POST', '/api/v1/auth/member/register', { body: p });
  expect(reg.status).toBe(200);
  const memberId = (reg.body.data!.member as { id: number }).id;
  // Names as stored by any path (an import, an older API version): CR/LF, a bidi override, length.
  const hostile = `Eve\r\nBcc: victim@example.com\u202E${'x'.repeat(300)}`;
  await sys.db.query(`UPDATE identity.members SET name = $2 WHERE id = $1`, [memberId, hostile]);

  const oneLine = (text: string, prefix: string) => {
    const line = text.split('\n').find((l) => l.startsWith(prefix));
    expect(line, text).toBeDefined();
    return line!;
  };
  // A sign-in code mail.
  sys.clock.advance(61_000);
  const before = sys.mail.messages.length;
  expect((await live('POST', '/api/v1/auth/member/request-otp', { body: { email: p.email } })).status).toBe(200);
  await sys.mail.codeFor(p.email, before);
  const codeMail = sys.mail.messages.slice(before).find((m) => m.to.includes(p.email))!;
  const hello = oneLine(codeMail.text, 'Hello ');
  expect(hello.startsWith('Hello Eve Bcc: victim@example.com x')).toBe(true);
  expect(Array.from(hello).length).toBeLessThanOrEqual('Hello ,'.length + 100);
  expect(codeMail.text).not.toMatch(/\r|\u202E/);
  expect(codeMail.text.split('\n').filter((l) => l.startsWith('Bcc'))).toEqual([]);

  // A claim notification whose reward name and staff note carry line breaks and are long.
  const subjects = new Subjects(sys.env.SUBJECT_ROOT);
  const id = randomUUID();
  const event = {
    id,
    type: 'claims.claim_rejected',
    tenant_id: t.tenantId,
    occurred_at: new Date().toISOString(),
    data: {
      member_id: memberId,
      reward_name: 'Tea\r\n\r\nYour account is locked, call +1 555 0100',
      staff_note: `Sorry\nSubject: phish\n${'n'.repeat(2_000)}`,
    },
  };
  await nc.jetstream().publish(subjects.event('claims', 'claim_rejected'), JSON.stringify(event), { msgID: id });
  const notice = await sys.mail.waitFor(p.email, (m) => m.subject === 'Your reward claim was not approved', 10_000);
  const lines = notice.text.trim().split('\n');
  expect(lines).toHaveLength(4); // greeting, blank, the claim line, the staff note
  expect(lines[2]).toBe(
    'Your claim for "Tea Your account is locked, call +1 555 0100" was not approved, and your points were kept.',
  );
  expect(lines[3]!.startsWith('Note from staff: Sorry Subject: phish n')).toBe(true);
  expect(Array.from(lines[3]!).length).toBeLessThanOrEqual('Note from staff: '.length + 500);
});
