// Expiry: how fast the ledger's lot sweep (services/ledger/src/lots/sweeper.ts) expires lots when
// many are due at once. A points card gets `lots` spendable lots, `lotsPerAccount` per account,
// all already past their expiry, written with SQL (generate_series) as if credited long ago: the
// accounts, their credit journal rows and their lots agree as the ledger keeps them. The running
// ledger (its sweep every LOT_SWEEP_INTERVAL_MS) then expires them; the figure is lots expired per
// second from its first expiry to its last, read from the accounts still due.
import type pg from 'pg';
import type { Api } from './api.ts';
import type { Fixture } from './provision.ts';

export interface ExpiryReport {
  lots: number;
  accounts: number;
  /** Seconds to write them with SQL (not part of the figure). */
  seed_seconds: number;
  /** From the first account settled to the last. */
  seconds: number;
  lots_per_second: number;
  /** points_expired journal rows written (one per lot) and events (one per account). */
  journal_rows: number;
  events: number;
  checks: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Accounts, their credit journal rows and their lots, all due: member ids far above the fixture's, 100 points a lot. */
async function seed(db: pg.PoolClient, cardId: number, tenantId: number, accounts: number, perAccount: number) {
  await db.query(
    `INSERT INTO ledger.accounts (card_id, member_id, tenant_id, balance, entries, next_change_at, created_at, updated_at)
     SELECT $1, 100000000 + g, $2, 100 * $4::int, $4::int, now() - interval '1 day', now() - interval '60 days', now() - interval '60 days'
       FROM generate_series(1, $3::int) g`,
    [cardId, tenantId, accounts, perAccount],
  );
  await db.query(
    `INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, purchase_cents, created_at)
     SELECT $2, $1, 100000000 + a, 'staff_added_points', 100, 100 * l, 10000, now() - interval '60 days' + l * interval '1 minute'
       FROM generate_series(1, $3::int) a, generate_series(1, $4::int) l`,
    [cardId, tenantId, accounts, perAccount],
  );
  await db.query(
    `INSERT INTO ledger.lots (tenant_id, card_id, member_id, amount, remaining, pending, available_at, expires_at, warn_at, warned, created_at)
     SELECT $2, $1, 100000000 + a, 100, 100, false, now() - interval '60 days', now() - interval '1 day' - l * interval '1 minute',
            now() - interval '2 days', true, now() - interval '60 days'
       FROM generate_series(1, $3::int) a, generate_series(1, $4::int) l`,
    [cardId, tenantId, accounts, perAccount],
  );
}

export async function measureExpiry(
  api: Api,
  f: Fixture,
  pool: pg.Pool,
  opts: { lots: number; lotsPerAccount: number; timeoutSeconds: number; log: (line: string) => void },
): Promise<ExpiryReport> {
  const { card } = await api.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${f.tenantId}/cards`, {
    name: 'Expiry bench',
    reward_system: 'points',
    points_ratio: 1,
    expiry_days: 30,
    expiry_warning_days: 0,
  });
  const perAccount = opts.lotsPerAccount;
  const accounts = Math.ceil(opts.lots / perAccount);
  const lots = accounts * perAccount;
  opts.log(`expiry: writing ${lots.toLocaleString('en-US')} lots due on ${accounts.toLocaleString('en-US')} accounts`);
  const started = Date.now();
  // One transaction: the sweep (every second in the bench) must never see an account without its lots.
  const db = await pool.connect();
  try {
    await db.query('BEGIN');
    await seed(db, card.id, f.tenantId, accounts, perAccount);
    await db.query('COMMIT');
  } catch (err) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    db.release();
  }
  await pool.query('VACUUM ANALYZE ledger.accounts, ledger.lots, ledger.journal');
  await pool.query('CHECKPOINT').catch(() => undefined);
  const seedSeconds = Math.round((Date.now() - started) / 100) / 10;

  const due = async () =>
    Number(
      (
        await pool.query<{ n: string }>(
          'SELECT count(*) AS n FROM ledger.accounts WHERE card_id = $1 AND next_change_at <= now()',
          [card.id],
        )
      ).rows[0]!.n,
    );
  opts.log('expiry: waiting for the ledger sweep');
  const deadline = Date.now() + opts.timeoutSeconds * 1000;
  let first: number | null = null;
  let remaining = accounts;
  while (remaining > 0) {
    if (Date.now() > deadline)
      throw new Error(`expiry: ${remaining} accounts still due after ${opts.timeoutSeconds} s`);
    await sleep(100);
    remaining = await due();
    if (first === null && remaining < accounts) first = Date.now();
  }
  const seconds = Math.max(0.1, (Date.now() - (first ?? Date.now())) / 1000);

  const { rows } = await pool.query<{ journal: string; events: string; left: string; balances: string }>(
    `SELECT (SELECT count(*) FROM ledger.journal WHERE card_id = $1 AND event = 'points_expired') AS journal,
            (SELECT count(*) FROM ledger.outbox WHERE payload->>'type' = 'ledger.points_expired'
               AND (payload->'data'->>'card_id')::bigint = $1) AS events,
            (SELECT COALESCE(sum(remaining), 0) FROM ledger.lots WHERE card_id = $1) AS left,
            (SELECT COALESCE(sum(balance), 0) FROM ledger.accounts WHERE card_id = $1) AS balances`,
    [card.id],
  );
  const r = rows[0]!;
  const checks: string[] = [];
  if (Number(r.journal) !== lots) checks.push(`expiry: ${r.journal} points_expired rows, expected ${lots}`);
  if (Number(r.left) !== 0 || Number(r.balances) !== 0)
    checks.push(`expiry: ${r.left} points left in lots and ${r.balances} in balances, expected 0`);
  return {
    lots,
    accounts,
    seed_seconds: seedSeconds,
    seconds: Math.round(seconds * 10) / 10,
    lots_per_second: Math.round(lots / seconds),
    journal_rows: Number(r.journal),
    events: Number(r.events),
    checks,
  };
}
