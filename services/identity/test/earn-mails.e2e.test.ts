import { randomUUID } from 'node:crypto';
import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Subjects } from '@loyalty/contracts';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { connectAs } from '../../../test/support/nats.ts';
import { until } from '../../../test/support/until.ts';
import { digestMail } from '../src/mail/earn-mails.ts';
import { defaultBranding } from '../src/mail/render/index.ts';

/**
 * Points-earned mail is summarized: every earn of a member within EARN_MAIL_WINDOW_SECONDS of the
 * first becomes one mail, so a burst of earns never turns into a burst of mail. Time is the
 * system's manual clock.
 */
let sys: TestSystem;
let nc: NatsConnection;
let subjects: Subjects;

beforeAll(async () => {
  sys = await startTestSystem({
    services: ['identity'],
    env: { EARN_MAIL_WINDOW_SECONDS: '60', EARN_MAIL_INTERVAL_MS: '50', MAIL_NOTIFICATIONS_PER_SECOND: '0' },
  });
  nc = await connectAs('admin', { url: sys.env.NATS_URL });
  subjects = new Subjects(sys.env.SUBJECT_ROOT!);
});
afterAll(async () => {
  await nc?.drain();
  await sys?.stop();
});

let n = 0;
async function member(api: ReturnType<typeof apiClient>): Promise<{ id: number; email: string }> {
  n += 1;
  const email = `digest${n}.${Date.now()}@example.com`;
  const r = await api('POST', '/api/v1/auth/member/register', {
    // Points-earned digests are marketing mail: they go to members who agreed to it.
    body: {
      name: `Digest ${n}`,
      email,
      phone: `+1655${String(1_000_000 + n * 7919 + (Date.now() % 1000)).slice(-7)}`,
      accepts_emails: true,
    },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return { id: (r.body.data!.member as { id: number }).id, email };
}

async function earned(tenantId: number, data: Record<string, unknown>, at = sys.clock.now()): Promise<void> {
  const id = randomUUID();
  const event = { id, type: 'ledger.points_earned', tenant_id: tenantId, occurred_at: at.toISOString(), data };
  await nc.jetstream().publish(subjects.event('ledger', 'points_earned'), JSON.stringify(event), { msgID: id });
}

/** Earns joined for a member (the consumer has handled them). */
async function joined(tenantId: number, memberId: number): Promise<number> {
  const { rows } = await sys.db.query<{ earns: number }>(
    `SELECT earns FROM identity.earn_mail_digests WHERE tenant_id = $1 AND member_id = $2`,
    [tenantId, memberId],
  );
  return rows[0]?.earns ?? 0;
}

const mailsTo = (email: string) =>
  sys.mail.messages.filter((m) => m.to === email && m.subject.startsWith('You earned'));

describe('points-earned mail digests', () => {
  it('turns many earns within the window into one mail, and starts a new window after it', async () => {
    const t = await sys.tenant();
    const api = apiClient(sys.url, t);
    const [busy, single] = [await member(api), await member(api)];
    const start = sys.clock.now().getTime();
    for (let i = 1; i <= 5; i++) {
      await earned(
        t.tenantId,
        { member_id: busy.id, card_id: 7, points: 10 * i, new_balance: 100 + 10 * i },
        new Date(start + i),
      );
    }
    await earned(t.tenantId, { member_id: single.id, card_id: 7, points: 25, new_balance: 25 });
    await until(async () => (await joined(t.tenantId, busy.id)) === 5 && (await joined(t.tenantId, single.id)) === 1);

    // Inside the window: nothing is mailed.
    await new Promise((r) => setTimeout(r, 300));
    expect(mailsTo(busy.email)).toHaveLength(0);
    expect(mailsTo(single.email)).toHaveLength(0);

    sys.clock.advance(61_000);
    await until(() => mailsTo(busy.email).length === 1 && mailsTo(single.email).length === 1);
    const [digest] = mailsTo(busy.email);
    expect(digest!.subject).toBe('You earned 150 points');
    expect(digest!.text).toContain('You earned 150 points in 5 purchases. Your balance is now 150 points.');
    // One earn keeps the single-earn mail exactly.
    expect(mailsTo(single.email)[0]!.subject).toBe('You earned 25 points');
    expect(mailsTo(single.email)[0]!.text).toContain('You earned 25 points. Your balance is now 25 points.');
    await until(async () => (await joined(t.tenantId, busy.id)) === 0);

    // A later earn opens a new window: mailed only when that one closes.
    await earned(t.tenantId, { member_id: busy.id, card_id: 7, points: 5, new_balance: 155 });
    await until(async () => (await joined(t.tenantId, busy.id)) === 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(mailsTo(busy.email)).toHaveLength(1);
    sys.clock.advance(61_000);
    await until(() => mailsTo(busy.email).length === 2);
    expect(mailsTo(busy.email)[1]!.text).toContain('You earned 5 points. Your balance is now 155 points.');
  });

  it("tells when pending points become spendable as a day of the card's time zone (the event's time_zone)", async () => {
    const t = await sys.tenant();
    const api = apiClient(sys.url, t);
    const m = await member(api);
    // 02:00 UTC on April 1st is still March 31st in Los Angeles.
    await earned(t.tenantId, {
      member_id: m.id,
      card_id: 9,
      points: 40,
      new_balance: 0,
      pending: true,
      available_at: '2027-04-01T02:00:00.000Z',
      time_zone: 'America/Los_Angeles',
    });
    await until(async () => (await joined(t.tenantId, m.id)) === 1);
    const { rows } = await sys.db.query(
      `SELECT time_zone FROM identity.earn_mail_digests WHERE tenant_id = $1 AND member_id = $2`,
      [t.tenantId, m.id],
    );
    expect(rows[0]).toEqual({ time_zone: 'America/Los_Angeles' });
    sys.clock.advance(61_000);
    await until(() => mailsTo(m.email).length === 1);
    expect(mailsTo(m.email)[0]!.text).toContain('You earned 40 points. They can be spent from March 31, 2027.');
  });

  it('a redelivered event joins once', async () => {
    const t = await sys.tenant();
    const api = apiClient(sys.url, t);
    const m = await member(api);
    const id = randomUUID();
    const event = {
      id,
      type: 'ledger.points_earned',
      tenant_id: t.tenantId,
      occurred_at: sys.clock.now().toISOString(),
      data: { member_id: m.id, card_id: 1, points: 10, new_balance: 10 },
    };
    // Published twice under different message ids (JetStream would drop the same one): the consumer's
    // record of handled event ids keeps the second from joining.
    const js = nc.jetstream();
    await js.publish(subjects.event('ledger', 'points_earned'), JSON.stringify(event), { msgID: id });
    await js.publish(subjects.event('ledger', 'points_earned'), JSON.stringify(event), { msgID: `${id}-again` });
    await earned(t.tenantId, { member_id: m.id, card_id: 1, points: 1, new_balance: 11 });
    await until(async () => (await joined(t.tenantId, m.id)) === 2);
    sys.clock.advance(61_000);
    await until(() => mailsTo(m.email).length === 1);
    expect(mailsTo(m.email)[0]!.subject).toBe('You earned 11 points');
  });
});

describe('the digest mail', () => {
  const base = {
    tenant_id: '1',
    member_id: '2',
    card_id: '3' as string | null,
    earns: 3,
    points: '90',
    pending_points: '0',
    available_at: null as Date | null,
    new_balance: '400' as string | null,
  };
  const tenant = { tenantId: 1, sandbox: true, branding: defaultBranding('Shop'), locale: 'en' as const };
  it('tells pending points and their day, and no balance when earns were on several cards', async () => {
    const mixed = await digestMail(
      { ...base, card_id: null, pending_points: '40', available_at: new Date('2027-01-31T10:00:00Z') },
      'Ann',
      tenant,
    );
    expect(mixed.text).toBe(
      'Hello Ann,\n\nYou earned 90 points in 3 purchases. 40 of them can be spent from January 31, 2027.\n',
    );
  });
  it('keeps the pending single-earn text', async () => {
    const one = await digestMail(
      { ...base, earns: 1, points: '40', pending_points: '40', available_at: new Date('2027-01-31T00:00:00Z') },
      'Ann',
      tenant,
    );
    expect(one.text).toBe('Hello Ann,\n\nYou earned 40 points. They can be spent from January 31, 2027.\n');
  });
  it('tells the day in the card’s time zone and the locale', async () => {
    const late = {
      ...base,
      earns: 1,
      points: '40',
      pending_points: '40',
      available_at: new Date('2027-01-31T23:30:00Z'),
    };
    const fr = await digestMail(late, 'Ann', tenant, { locale: 'fr', timeZone: 'Asia/Tokyo' });
    expect(fr.text).toBe(
      'Bonjour Ann,\n\nVous avez gagné 40 points. Ils seront utilisables à partir du 1 février 2027.\n',
    );
  });
});
