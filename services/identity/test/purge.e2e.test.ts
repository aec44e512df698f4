import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Metrics, PURGE_BATCH, purge, sharedPurgeRules } from '@loyalty/runtime';
import { apiClient, startTestSystem, testPool, type TestSystem } from '../../../test/support/system.ts';

/**
 * The periodic purge (runService, every PURGE_INTERVAL_MS; here run by hand with the test's
 * ManualClock): idempotency records after 48 h, processed-event ids after 8 days, one-time codes
 * and member sessions a day after they stopped working; counted in loyalty_purged_rows_total.
 */
let sys: TestSystem;
let api: ReturnType<typeof apiClient>;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity'] });
  api = apiClient(sys.url, await sys.tenant({ sandbox: true }));
});
afterAll(async () => sys?.stop());

const count = async (table: string) =>
  (await sys.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM identity.${table}`)).rows[0]!.n;
const counts = async () => ({
  otps: await count('otps'),
  member_sessions: await count('member_sessions'),
  idempotency_keys: await count('idempotency_keys'),
  processed_events: await count('processed_events'),
});
const purgeNow = () => sys.services.identity!.purgeNow();

it('deletes each kind of row only after its retention, and counts it per table', async () => {
  // A member with a code (registration, under an Idempotency-Key), a session that is revoked and
  // one left to expire, and a processed event.
  const email = `purged.${Date.now()}@example.com`;
  const reg = await api('POST', '/api/v1/auth/member/register', {
    body: { name: 'Purged', email, phone: '+15550001234' },
    headers: { 'idempotency-key': randomUUID() },
  });
  expect(reg.status, JSON.stringify(reg.body)).toBe(200);
  const signIn = async (code: string) => {
    const r = await api('POST', '/api/v1/auth/member/verify-otp', { body: { email, code } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.data!.member_token as string;
  };
  const revoked = await signIn(reg.body.data!.otp_code as string);
  expect((await api('POST', '/api/v1/auth/member/logout', { token: revoked })).status).toBe(200);
  sys.clock.advance(61_000);
  const again = await api('POST', '/api/v1/auth/member/request-otp', { body: { email } });
  await signIn(again.body.data!.otp_code as string); // a session that expires after its hour
  await sys.db.query(`INSERT INTO identity.processed_events (consumer, event_id) VALUES ('test', $1)`, [randomUUID()]);
  const before = await counts();
  expect(before).toMatchObject({ otps: 2, member_sessions: 2 });
  expect(before.idempotency_keys).toBeGreaterThanOrEqual(1);
  expect(before.processed_events).toBeGreaterThanOrEqual(1);

  // Nothing is old enough yet.
  expect(Object.values(await purgeNow()).every((n) => n === 0)).toBe(true);
  expect(await counts()).toEqual(before);

  // A day after the codes expired and the session was revoked: those go, the live session stays.
  sys.clock.advance(DAY + 15 * 60_000);
  expect(await purgeNow()).toMatchObject({ otps: 2, member_sessions: 1, idempotency_keys: 0, processed_events: 0 });
  expect(await counts()).toEqual({ ...before, otps: 0, member_sessions: 1 });

  // 48 hours: the idempotency records; a day after the other session expired: it too.
  sys.clock.advance(DAY);
  expect(await purgeNow()).toMatchObject({ idempotency_keys: before.idempotency_keys, member_sessions: 1 });
  expect(await counts()).toMatchObject({
    idempotency_keys: 0,
    member_sessions: 0,
    processed_events: before.processed_events,
  });

  // Processed-event ids stay 8 days (JetStream keeps events 7).
  sys.clock.advance(5 * DAY);
  expect(await purgeNow()).toMatchObject({ processed_events: 0 });
  sys.clock.advance(DAY + HOUR);
  expect(await purgeNow()).toMatchObject({ processed_events: before.processed_events });
  expect(await count('processed_events')).toBe(0);

  const metrics = await (await fetch(`http://127.0.0.1:${sys.services.identity!.opsPort}/metrics`)).text();
  for (const [table, n] of [
    ['otps', 2],
    ['member_sessions', 2],
    ['idempotency_keys', before.idempotency_keys],
    ['processed_events', before.processed_events],
  ] as const)
    expect(metrics).toMatch(new RegExp(`loyalty_purged_rows_total\\{[^}]*table="${table}"[^}]*\\} ${n}\\b`));
});

it('purges in bounded batches, and two replicas purging at once delete every row once', async () => {
  const rows = 2 * PURGE_BATCH + 345;
  await sys.db.query(
    `INSERT INTO identity.processed_events (consumer, event_id, processed_at)
     SELECT 'bulk', g::text, now() - interval '9 days' FROM generate_series(1, $1) g`,
    [rows],
  );
  // A second replica's purge: its own pool and metrics, the same tables.
  const other = testPool(sys.env.DATABASE_URL!, 1);
  try {
    const [a, b] = await Promise.all([
      purgeNow(),
      purge(other, 'identity', sharedPurgeRules, sys.clock, new Metrics('identity')),
    ]);
    expect(a.processed_events! + b.processed_events!).toBe(rows);
  } finally {
    await other.end();
  }
  expect(await count('processed_events')).toBe(0);
});
