import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { apiClient, createTestDatabase, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { lotsAgree, type Api } from './support.ts';

/**
 * The lots migration on a database written by the version before lots (efe8049): its dump
 * (fixtures/v0-database.sql, made by fixtures/make-v0-fixture.ts through the public API) is loaded,
 * then every service starts on it and migrates. Each balance becomes one spendable lot that never
 * expires, every answer keeps its figures, and a claim request made before holds (it has none)
 * is still approved by a plain debit.
 */
const here = path.dirname(fileURLToPath(import.meta.url));
let sys: TestSystem;
let api: Api;
const POINTS = 1; // the fixture's points card
const CASHBACK = 2; // and its cashback card

/** The fixture's balances (ledger.accounts as the old version left them): card, member, balance. */
const before: [number, number, number][] = [
  [2, 1, 403],
  [2, 2, 806],
  [1, 2, 200],
  [2, 3, 1108],
  [1, 4, 500],
  [2, 4, 1261],
  [1, 3, 350],
  [1, 1, 200],
  [1, 5, 35],
];

beforeAll(async () => {
  const database = await createTestDatabase();
  const db = new pg.Client({ connectionString: database.url });
  await db.connect();
  try {
    await db.query(readFileSync(path.join(here, 'fixtures', 'v0-database.sql'), 'utf8'));
    // The dump's pending claim request expired three days after the dump was made (in real time);
    // it must still be pending when the services start on it, whatever today's date.
    await db.query(`UPDATE claims.claim_requests SET expires_at = now() + interval '3 days' WHERE status = 'pending'`);
  } finally {
    await db.end();
  }
  sys = await startTestSystem({ services: ['identity', 'ledger', 'claims', 'referrals'], database });
  const { app } = await sys.admin<{ app: { app_id: string; api_key: string } }>('POST', '/admin/v1/tenants/1/apps', {
    name: 'after the migration',
    scopes: ['points_read', 'points_write', 'cashback_read', 'cashback_write', 'card_read'],
  });
  api = apiClient(sys.url, { appId: app.app_id, apiKey: app.api_key });
});
afterAll(async () => sys?.stop());

it('turns every balance into one spendable lot that never expires', async () => {
  const { rows } = await sys.db.query<{ card_id: number; member_id: number; amount: number; remaining: number }>(
    `SELECT card_id, member_id, amount, remaining FROM ledger.lots
      WHERE journal_id IS NULL AND NOT pending AND expires_at IS NULL ORDER BY card_id, member_id`,
  );
  expect(rows.map((r) => [r.card_id, r.member_id, r.amount, r.remaining])).toEqual(
    before.map(([c, m, b]) => [c, m, b, b]).sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!),
  );
  const other = await sys.db.query('SELECT count(*)::int AS n FROM ledger.lots WHERE journal_id IS NOT NULL');
  expect(other.rows[0]).toEqual({ n: 0 });
  expect(await lotsAgree(sys, POINTS)).toBe(5);
  expect(await lotsAgree(sys, CASHBACK)).toBe(4);
});

it('answers every balance as before, with nothing pending, held or expiring', async () => {
  for (const [card, member, balance] of before) {
    const kind = card === POINTS ? 'loyalty/points' : 'cashback/cashback';
    const r = await api('GET', `/api/v1/${kind}/balance?card_id=${card}&member_id=${member}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject(
      card === POINTS
        ? { points_balance: balance, pending_points: 0, held_points: 0, next_expiries: [] }
        : { cashback_balance: balance / 100, pending_cashback: 0, held_cashback: 0, next_expiries: [] },
    );
  }
  const cards = await sys.admin<{ cards: Record<string, unknown>[] }>('GET', '/admin/v1/tenants/1/cards');
  for (const c of cards.cards) expect(c).toMatchObject({ expiry_days: null, pending_days: 0, expiry_warning_days: 14 });
});

it('approves a claim request made before holds with a plain debit', async () => {
  const { rows } = await sys.db.query<{ id: number; hold_status: string }>(
    `SELECT id, hold_status FROM claims.claim_requests WHERE status = 'pending'`,
  );
  expect(rows).toEqual([{ id: 3, hold_status: 'none' }]);
  const r = await api('POST', '/api/v1/loyalty/claims/3/approve', { body: {} });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.data!.claim_request).toMatchObject({ status: 'approved', points_deducted: 100 });
  const b = await api('GET', `/api/v1/loyalty/points/balance?card_id=${POINTS}&member_id=4`);
  expect(b.body.data).toMatchObject({ points_balance: 400, held_points: 0 });
  await lotsAgree(sys, POINTS, 4);
});

it('keeps earning, refunding and redeeming on the migrated accounts', async () => {
  const earned = await api('POST', '/api/v1/loyalty/points/earn', {
    body: { card_id: POINTS, member_id: 1, purchase_amount: 30, reference: 'after-migration' },
  });
  expect(earned.body.data).toMatchObject({ points_earned: 30, new_balance: 230 });
  // A purchase earned before the migration is still refundable against its reference.
  const refunded = await api('POST', '/api/v1/loyalty/points/refund', {
    body: { card_id: POINTS, member_id: 1, refund_amount: 150, reference: 'order-1' },
  });
  expect(refunded.body.data).toMatchObject({ points_deducted: 150, previous_balance: 230, new_balance: 80 });
  const cashback = await api('POST', '/api/v1/cashback/cashback/refund', {
    body: { card_id: CASHBACK, member_id: 4, refund_amount: 100 },
  });
  expect(cashback.body.data).toMatchObject({ cashback_deducted: 5, previous_balance: 12.61, new_balance: 7.61 });
  await lotsAgree(sys, POINTS);
  await lotsAgree(sys, CASHBACK);
});
