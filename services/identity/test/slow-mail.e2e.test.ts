import { afterAll, beforeAll, expect, it } from 'vitest';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';

/**
 * No SMTP conversation while a database transaction is open: claim decisions are mailed to members
 * by identity's notification consumers, which only record the mail in their transaction; the
 * outgoing-mail sender sends it after the commit. With a mail server that takes 10 s to answer
 * each of those mails, identity's pool (5 connections here) is not held: other operations answer
 * at once, and every member gets their mail exactly once when the server answers.
 */
let sys: TestSystem;
const SLOW_MS = 10_000;
const CLAIMS = 6;

beforeAll(async () => {
  sys = await startTestSystem({
    services: ['identity', 'ledger', 'claims'],
    // More mails at once than identity has connections; no pace, so all of them are in flight together.
    env: { DATABASE_POOL_SIZE: '5', MAIL_CONCURRENCY: '8', MAIL_NOTIFICATIONS_PER_SECOND: '0' },
  });
  // The mail server answers a claim decision's mail only after 10 s (codes and the rest at once).
  sys.mail.delay = (m) => (/reward claim/.test(m.subject) ? SLOW_MS : 0);
}, 60_000);
afterAll(async () => {
  await sys?.stop();
});

it('decides claims while the mail server takes 10 s per mail: no connection held, others unaffected, each mail once', async () => {
  const t = await sys.tenant();
  const api = apiClient(sys.url, t);
  const { card } = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${t.tenantId}/cards`, {
    name: 'Points',
    reward_system: 'points',
    points_ratio: 1,
  });
  const { reward } = await sys.admin<{ reward: { id: number } }>(
    'POST',
    `/admin/v1/tenants/${t.tenantId}/cards/${card.id}/rewards`,
    { name: 'Coffee', points_cost: 100 },
  );
  const stamp = Date.now();
  const members = Array.from({ length: CLAIMS }, (_, i) => `slow${i}.${stamp}@example.com`);
  const claimIds: number[] = [];
  for (const email of members) {
    const earned = await api('POST', '/api/v1/loyalty/points/earn', {
      body: { card_id: card.id, email, member_name: 'Slow Mail', purchase_amount: 300 },
    });
    expect(earned.status, JSON.stringify(earned.body)).toBe(200);
    const otp = await api('POST', '/api/v1/loyalty/claims/request-otp', {
      body: { member_email: email, card_id: card.id, reward_id: reward.id },
    });
    expect(otp.status, JSON.stringify(otp.body)).toBe(200);
    const created = await api('POST', '/api/v1/loyalty/claims', {
      body: {
        member_email: email,
        card_id: card.id,
        reward_id: reward.id,
        verification_code: otp.body.data!.otp_code as string,
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    claimIds.push((created.body.data!.claim_request as { id: number }).id);
  }

  // Every claim decided at once: six mails reach the slow server together.
  const decided = await Promise.all(
    claimIds.map((id) => api('POST', `/api/v1/loyalty/claims/${id}/approve`, { body: { staff_note: 'Enjoy' } })),
  );
  for (const d of decided) expect(d.status, JSON.stringify(d.body)).toBe(200);
  const decidedAt = Date.now();

  // While the server sits on them: identity holds no connection in a transaction waiting (a
  // transaction idle for over a second: between two statements of a working one, it is
  // milliseconds), and its other operations (a registration writes a member, a code and an event)
  // answer at once.
  let idleInTransaction = 0;
  let slowest = 0;
  let n = 0;
  while (Date.now() - decidedAt < SLOW_MS - 2_000) {
    const { rows } = await sys.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'identity' AND state LIKE 'idle in transaction%'
          AND now() - state_change > interval '1 second'`,
    );
    idleInTransaction = Math.max(idleInTransaction, rows[0]!.n);
    const started = Date.now();
    n += 1;
    const registered = await api('POST', '/api/v1/auth/member/register', {
      body: { name: 'Other', email: `other${n}.${stamp}@example.com`, phone: `+1555${String(stamp + n).slice(-7)}` },
    });
    expect(registered.status, JSON.stringify(registered.body)).toBe(200);
    slowest = Math.max(slowest, Date.now() - started);
  }
  expect(n).toBeGreaterThanOrEqual(3);
  expect(idleInTransaction).toBe(0);
  expect(slowest).toBeLessThan(2_000);
  // Nothing was mailed yet: the server has not answered.
  expect(sys.mail.messages.filter((m) => /reward claim/.test(m.subject))).toEqual([]);

  // Then every member gets the decision, once.
  const approvedMails = () => sys.mail.messages.filter((m) => m.subject === 'Your reward claim was approved');
  const deadline = Date.now() + 30_000;
  while (approvedMails().length < CLAIMS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  // A little longer: a mail sent twice would show now.
  await new Promise((r) => setTimeout(r, 1_500));
  expect(
    approvedMails()
      .map((m) => m.to)
      .sort(),
  ).toEqual([...members].sort());
  for (const m of approvedMails()) expect(m.at - decidedAt).toBeGreaterThanOrEqual(SLOW_MS - 500);
  const { rows: queued } = await sys.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM identity.outgoing_mails`);
  expect(queued[0]!.n).toBe(0);
}, 120_000);

it('mails sign-in codes outside any transaction, and takes back a code whose mail failed', async () => {
  const t = await sys.tenant();
  const api = apiClient(sys.url, t);
  const email = `codes.${Date.now()}@example.com`;
  const registered = await api('POST', '/api/v1/auth/member/register', {
    body: { name: 'Codes', email, phone: `+1444${String(Date.now()).slice(-7)}` },
  });
  expect(registered.status, JSON.stringify(registered.body)).toBe(200);
  // A used code is no resend: the next one is not held back by the cooldown.
  const use = async (code: unknown) => {
    const r = await api('POST', '/api/v1/auth/member/verify-otp', { body: { email, code } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  };
  await use(registered.body.data!.otp_code);

  // A mail server taking 3 s for the code: the request waits for it, holding no transaction open
  // (none idle for over a second).
  sys.mail.delay = (m) => (m.to.includes(email) ? 3_000 : 0);
  const started = Date.now();
  const slow = api('POST', '/api/v1/auth/member/request-otp', { body: { email } });
  let done = false;
  void slow.finally(() => (done = true));
  let idleInTransaction = 0;
  while (!done) {
    const { rows } = await sys.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'identity' AND state LIKE 'idle in transaction%'
          AND now() - state_change > interval '1 second'`,
    );
    idleInTransaction = Math.max(idleInTransaction, rows[0]!.n);
    await new Promise((r) => setTimeout(r, 50));
  }
  const answered = await slow;
  expect(answered.status, JSON.stringify(answered.body)).toBe(200);
  expect(Date.now() - started).toBeGreaterThanOrEqual(2_900);
  expect(idleInTransaction).toBe(0);
  await use(answered.body.data!.otp_code);

  // A mail server that refuses: 503 email_delivery_failed, and the code is taken back, so the next
  // request is not answered otp_cooldown for a code the member never got.
  sys.mail.delay = () => 0;
  sys.mail.refuse = (m) => m.to.includes(email);
  const refused = await api('POST', '/api/v1/auth/member/request-otp', { body: { email } });
  expect(refused.status, JSON.stringify(refused.body)).toBe(503);
  expect(refused.body.error).toMatchObject({ code: 'email_delivery_failed' });
  sys.mail.refuse = () => false;
  const again = await api('POST', '/api/v1/auth/member/request-otp', { body: { email } });
  expect(again.status, JSON.stringify(again.body)).toBe(200);
  await sys.mail.waitFor(email, (m) => m.text.includes(String(again.body.data!.otp_code)));
}, 60_000);
