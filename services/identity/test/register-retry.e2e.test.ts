import { afterAll, beforeAll, expect, it } from 'vitest';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';

/**
 * A registration retried while its first attempt is still running. The first attempt mails the
 * sign-in code before it writes the member; with a mail server slower than the gateway's wait, the
 * client gets 503 and retries with the same Idempotency-Key while identity is still working. The
 * retry must not register (or refuse) a second time: it is answered 409 idempotency_in_progress
 * while the first attempt holds the key, and the first attempt's answer afterwards. Before the key
 * was held from the start, the retry found no stored answer, passed the "email taken" check, and
 * ended 409 email_taken for a member that exists (a client told "refused" for a registration that
 * happened).
 */
let sys: TestSystem;
const SLOW_MS = 7_000;

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity'] });
  sys.mail.delay = (m) => (m.to.includes('slowreg') ? SLOW_MS : 0);
}, 60_000);
afterAll(async () => {
  await sys?.stop();
});

it('answers a retry of a registration still in progress 409 idempotency_in_progress, then the first answer', async () => {
  const t = await sys.tenant();
  const api = apiClient(sys.url, t);
  const email = `slowreg.${Date.now()}@example.com`;
  const body = { name: 'Slow Register', email, phone: `+3519${String(Date.now()).slice(-8)}` };
  const headers = { 'idempotency-key': `reg-${Date.now()}` };

  const startedAt = Date.now();
  const first = api('POST', '/api/v1/auth/member/register', { body, headers });
  // The retry while the first attempt waits on the mail server.
  await new Promise((r) => setTimeout(r, 1_500));
  const during = await api('POST', '/api/v1/auth/member/register', { body, headers });
  expect(during.status, JSON.stringify(during.body)).toBe(409);
  expect(during.body.error?.code).toBe('idempotency_in_progress');

  // The first attempt finishes (its own answer may be the gateway's 503: the client gave up on it).
  const firstAnswer = await first;
  expect([200, 201, 503]).toContain(firstAnswer.status);
  let after: Awaited<typeof first>;
  do {
    after = await api('POST', '/api/v1/auth/member/register', { body, headers });
    if (after.status === 409) await new Promise((r) => setTimeout(r, 500));
  } while (after.status === 409 && Date.now() - startedAt < SLOW_MS + 20_000);
  expect(after.status, JSON.stringify(after.body)).toBeLessThan(300);
  const member = after.body.data!.member as { id: number };
  if (firstAnswer.status < 300) expect(after.body).toEqual(firstAnswer.body);

  const { rows } = await sys.db.query<{ id: string }>(
    `SELECT id FROM identity.members WHERE tenant_id = $1 AND email = $2`,
    [t.tenantId, email],
  );
  expect(rows.map((r) => Number(r.id))).toEqual([member.id]);
  // One code mail: the retries mailed nothing.
  expect(sys.mail.messages.filter((m) => m.to.includes(email))).toHaveLength(1);
}, 60_000);
