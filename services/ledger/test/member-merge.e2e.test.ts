import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ledgerOperations, memberMergeInternalOperations, Subjects } from '@loyalty/contracts';
import { callService } from '@loyalty/runtime';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { connectAs } from '../../../test/support/nats.ts';
import { cashbackCard, lotsAgree, notificationsSettled, pointsCard, reward, signedIn, type Api } from './support.ts';

/**
 * The ledger's part of a member merge, asked as identity's merge job asks it: every account of the
 * source moves to the target with its lots (dates and pending state kept) and holds, one
 * member_merged row on each side; a repeat changes nothing; a redemption racing it never overspends.
 */
let sys: TestSystem;
let api: Api;
let tenantId: number;
let identity: NatsConnection;
let claims: NatsConnection;
const DAY = 86_400_000;

beforeAll(async () => {
  sys = await startTestSystem({
    services: ['identity', 'ledger'],
    env: { LOT_SWEEP_INTERVAL_MS: '3600000', DATABASE_POOL_SIZE: '10' },
  });
  const t = await sys.tenant();
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
  identity = await connectAs('identity', { url: sys.env.NATS_URL });
  claims = await connectAs('claims', { url: sys.env.NATS_URL });
});
afterAll(async () => {
  await identity?.close();
  await claims?.close();
  if (sys) await notificationsSettled(sys);
  await sys?.stop();
});

const subjects = () => new Subjects(sys.env.SUBJECT_ROOT);

async function merge(source: number, target: number, key = `job-${source}`) {
  const r = await callService(
    identity,
    subjects().op('ledger', memberMergeInternalOperations.ledgerMerge.operation),
    {
      meta: { request_id: `merge-${source}`, tenant_id: tenantId, idempotency_key: `${key}:ledger` },
      data: { source_member_id: source, target_member_id: target },
    },
    `merge-${source}`,
    10_000,
  );
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  return r.data as { moved: Record<string, number> };
}

async function earn(card: number, member: number, amount: number, path = '/api/v1/loyalty/points/earn') {
  const r = await api('POST', path, { body: { card_id: card, member_id: member, purchase_amount: amount } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

const lotsOf = async (card: number, member: number) =>
  (
    await sys.db.query<{ remaining: number; pending: boolean; available_at: Date; expires_at: Date | null }>(
      `SELECT remaining, pending, available_at, expires_at FROM ledger.lots
        WHERE card_id = $1 AND member_id = $2 AND remaining > 0 ORDER BY available_at, id`,
      [card, member],
    )
  ).rows.map((l) => ({ ...l, remaining: Number(l.remaining) }));

it('moves balances, pending points, holds and cashback to the target with their dates, once', async () => {
  const card = await pointsCard(sys, tenantId, { expiry_days: 90, pending_days: 3, expiry_warning_days: 0 });
  const cash = await cashbackCard(sys, tenantId, { cashback_percentage: 10 });
  const source = await signedIn(api);
  const target = await signedIn(api);
  await earn(card, source.id, 200);
  sys.clock.advance(4 * DAY); // the first purchase's points are spendable now
  await earn(card, source.id, 50); // pending for three days
  await earn(card, target.id, 30);
  await earn(cash, source.id, 80, '/api/v1/cashback/cashback/earn');
  await lotsAgree(sys, card);
  // A claim's hold on the source's points (as the claims service places it).
  const hold = await callService(
    claims,
    subjects().op('ledger', ledgerOperations.holdPoints.operation),
    {
      meta: { request_id: 'hold', tenant_id: tenantId, idempotency_key: 'claim:merge-test' },
      data: {
        card_id: card,
        member_id: source.id,
        points: 60,
        expires_at: new Date(sys.clock.now().getTime() + 3 * DAY).toISOString(),
      },
    },
    'hold',
    10_000,
  );
  expect(hold.ok).toBe(true);
  const before = await lotsOf(card, source.id);

  const first = await merge(source.id, target.id);
  expect(first.moved).toEqual({ accounts: 2, amount: 200 + 50 + 800, holds: 1 });
  const view = (await api('GET', `/api/v1/loyalty/points/balance?card_id=${card}&member_id=${target.id}`)).body.data!;
  expect(view).toMatchObject({ points_balance: 140, pending_points: 50 + 30, held_points: 60 });
  // Lots keep what they had, their pending state and their dates.
  const moved = (await lotsOf(card, target.id)).filter((l) => before.some((b) => +b.available_at === +l.available_at));
  expect(moved.map((l) => [l.remaining, l.pending, +l.available_at, l.expires_at && +l.expires_at])).toEqual(
    before.map((l) => [l.remaining, l.pending, +l.available_at, l.expires_at && +l.expires_at]),
  );
  expect(await lotsOf(card, source.id)).toEqual([]);
  const cashView = (await api('GET', `/api/v1/cashback/cashback/balance?card_id=${cash}&member_id=${target.id}`)).body
    .data!;
  expect(cashView.cashback_balance).toBe(8);
  // Both histories show the merge.
  for (const [member, points] of [
    [source.id, -250],
    [target.id, 250],
  ] as const) {
    const h = await api('GET', `/api/v1/loyalty/points/history?card_id=${card}&member_id=${member}`);
    expect((h.body.data!.transactions as { event: string; points: number }[])[0]).toMatchObject({
      event: 'member_merged',
      points,
    });
  }
  await lotsAgree(sys, card);
  await lotsAgree(sys, cash);

  // Again (a retried step): nothing more moves, nothing is written.
  const journal = await sys.db.query('SELECT count(*)::int AS n FROM ledger.journal WHERE tenant_id = $1', [tenantId]);
  expect((await merge(source.id, target.id)).moved).toEqual({ accounts: 0, amount: 0, holds: 0 });
  expect(
    (await sys.db.query('SELECT count(*)::int AS n FROM ledger.journal WHERE tenant_id = $1', [tenantId])).rows,
  ).toEqual(journal.rows);

  // The claim made before the merge is approved afterwards: its hold is captured on the target.
  const capture = await callService(
    claims,
    subjects().op('ledger', ledgerOperations.debitPoints.operation),
    {
      meta: { request_id: 'capture', tenant_id: tenantId, idempotency_key: 'claim:merge-test' },
      data: { card_id: card, member_id: source.id, points: 60, event: 'reward_claimed' },
    },
    'capture',
    10_000,
  );
  expect(capture.ok, JSON.stringify(capture)).toBe(true);
  const after = (await api('GET', `/api/v1/loyalty/points/balance?card_id=${card}&member_id=${target.id}`)).body.data!;
  expect(after).toMatchObject({ points_balance: 140, held_points: 0 });
  // The pending points mature for the target when they would have for the source.
  sys.clock.advance(3 * DAY);
  const matured = (await api('GET', `/api/v1/loyalty/points/balance?card_id=${card}&member_id=${target.id}`)).body
    .data!;
  expect(matured).toMatchObject({ points_balance: 220, pending_points: 0 });
  await lotsAgree(sys, card);
});

it('never overspends when redemptions race the merge', async () => {
  const card = await pointsCard(sys, tenantId);
  const prize = await reward(sys, tenantId, card, 40);
  const source = await signedIn(api);
  const target = await signedIn(api);
  await earn(card, source.id, 400);
  const redeems = Array.from({ length: 12 }, () =>
    api('POST', '/api/v1/loyalty/points/redeem', { token: source.token, body: { card_id: card, reward_id: prize } }),
  );
  const merged = merge(source.id, target.id);
  const results = await Promise.all(redeems);
  const { moved } = await merged;
  for (const r of results) expect([200, 422], JSON.stringify(r.body)).toContain(r.status);
  const redeemed = results.filter((r) => r.status === 200).length;
  expect(redeemed * 40 + moved.amount!).toBe(400);
  const t = (await api('GET', `/api/v1/loyalty/points/balance?card_id=${card}&member_id=${target.id}`)).body.data!;
  expect(t.points_balance).toBe(moved.amount);
  const s = (await api('GET', `/api/v1/loyalty/points/balance?card_id=${card}&member_id=${source.id}`)).body.data!;
  expect(s.points_balance).toBe(0);
  await lotsAgree(sys, card);
});
