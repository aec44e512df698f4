import { z } from 'zod';
import { PeriodicTask, withTransaction, type JobHandler, type Logger, type Pool } from '@loyalty/runtime';

/**
 * The report rollups (migration 50): the journal's statement trigger writes one delta per row in
 * the writer's transaction; the fold moves deltas into `report_days` / `report_active`, deleting
 * them in the same transaction, so each delta counts once. One fold at a time (an advisory lock),
 * so two replicas never upsert the same rollup rows against each other.
 */
const FOLD_LOCK = 0x7265706f; // 'repo'

/**
 * The active-member rollups of migration 57, as common table expressions over `active` (the
 * `report_active` rows just added, each new): the day's count, the members of the week and of the
 * month with their counts (a member counts once in a period, however many new days it brings), and
 * the member's days of the year (a bitmap, bit n: day of the year n + 1). Both the fold and the
 * rebuild end with them, so they hold what `report_active` holds.
 */
const ACTIVE_ROLLUPS = `
       day_counts AS (
         INSERT INTO ledger.report_active_counts AS c (card_id, period, start, members)
         SELECT card_id, 'day', day, count(*) FROM active GROUP BY card_id, day ORDER BY card_id, day
         ON CONFLICT (card_id, period, start) DO UPDATE SET members = c.members + excluded.members),
       period_members AS (
         INSERT INTO ledger.report_active_periods (card_id, period, start, member_id)
         SELECT DISTINCT a.card_id, p.period, date_trunc(p.period, a.day::timestamp)::date, a.member_id
           FROM active a CROSS JOIN (VALUES ('week'), ('month')) p (period) ORDER BY 1, 2, 3, 4
         ON CONFLICT DO NOTHING
         RETURNING card_id, period, start),
       period_counts AS (
         INSERT INTO ledger.report_active_counts AS c (card_id, period, start, members)
         SELECT card_id, period, start, count(*) FROM period_members GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
         ON CONFLICT (card_id, period, start) DO UPDATE SET members = c.members + excluded.members),
       years AS (
         INSERT INTO ledger.report_active_years AS y (card_id, year, member_id, days)
         SELECT card_id, extract(year FROM day)::int, member_id,
                bit_or(set_bit(B'0'::bit(366), extract(doy FROM day)::int - 1, 1))
           FROM active GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
         ON CONFLICT (card_id, year, member_id) DO UPDATE SET days = y.days | excluded.days)`;
const FOLD_BATCH = 50_000;

/**
 * The deltas that make a member active on their day: every event but an imported balance (the
 * programme moving in, not something the member did; a migration would otherwise count every
 * member it brings as active on the day it ran). SQL over the `event` of deltas named `alias`.
 */
export const activeDelta = (alias?: string) => `${alias ? `${alias}.` : ''}event <> 'balance_imported'`;

/** Fold up to `batch` deltas; how many were folded (0 when another replica holds the fold). */
export async function foldDeltas(pool: Pool, batch = FOLD_BATCH): Promise<number> {
  return withTransaction(pool, async (db) => {
    const { rows: lock } = await db.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS ok', [FOLD_LOCK]);
    if (!lock[0]?.ok) return 0;
    // The batch as a range of ids up to the batch's last one (an InitPlan run once, then one index
    // range): \`id IN (SELECT … LIMIT n)\` was planned, on statistics taken while the table was
    // small (a bulk import writes deltas faster than autovacuum analyzes), as a nested loop that ran
    // the subquery again for every row: minutes for one batch of a million deltas.
    const { rows } = await db.query<{ n: string }>(
      `WITH gone AS (
         DELETE FROM ledger.report_deltas
          WHERE id <= (SELECT max(id) FROM (SELECT id FROM ledger.report_deltas ORDER BY id LIMIT $1) b)
         RETURNING tenant_id, card_id, day, event, reward_id, member_id, amount),
       days AS (
         INSERT INTO ledger.report_days AS r (tenant_id, card_id, day, event, reward_id, credits, debits, entries)
         SELECT tenant_id, card_id, day, event, reward_id, sum(greatest(amount, 0)), sum(least(amount, 0)), count(*)
           FROM gone GROUP BY tenant_id, card_id, day, event, reward_id ORDER BY card_id, day, event, reward_id
         ON CONFLICT (card_id, day, event, reward_id) DO UPDATE
           SET credits = r.credits + excluded.credits, debits = r.debits + excluded.debits,
               entries = r.entries + excluded.entries),
       active AS (
         INSERT INTO ledger.report_active (card_id, day, member_id)
         SELECT DISTINCT card_id, day, member_id FROM gone WHERE ${activeDelta()} ORDER BY 1, 2, 3
         ON CONFLICT DO NOTHING
         RETURNING card_id, day, member_id),
       ${ACTIVE_ROLLUPS}
       SELECT count(*) AS n FROM gone`,
      [batch],
    );
    return Number(rows[0]?.n ?? 0);
  });
}

/** Deltas folded in a row after which the fold, once caught up, refreshes the rollups' statistics. */
const ANALYZE_AFTER = 200_000;
const REPORT_TABLES = [
  'report_days',
  'report_active',
  'report_active_periods',
  'report_active_counts',
  'report_active_years',
  'report_deltas',
];

/** The fold, in every replica (one at a time by the lock), again at once while a batch was full. */
export function reportFolder(pool: Pool, log: Logger, intervalMs: number): PeriodicTask<number> {
  let folded = 0;
  return new PeriodicTask({
    name: 'report-fold',
    intervalMs,
    log,
    run: async () => {
      const n = await foldDeltas(pool);
      // Autovacuum may be off or behind: after a burst (a bulk import, a seeded journal) the
      // rollups' statistics would still describe small tables, and the report's plans with them.
      folded += n;
      if (folded >= ANALYZE_AFTER && n < FOLD_BATCH) {
        folded = 0;
        await pool.query(`ANALYZE ${REPORT_TABLES.map((t) => `ledger.${t}`).join(', ')}`);
      }
      return n;
    },
    more: (n) => n >= FOLD_BATCH,
  });
}

/**
 * Rebuild one card's rollups from its journal, in one REPEATABLE READ transaction under the fold's
 * lock: the rollups and the card's deltas visible to its snapshot are replaced by the sums of the
 * journal rows visible to the same snapshot. A writer that commits later left its delta, which
 * still counts (its rows are not in the snapshot): nothing is counted twice or lost.
 */
export async function rebuildCard(pool: Pool, cardId: number): Promise<void> {
  const db = await pool.connect();
  try {
    await db.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await db.query('SELECT pg_advisory_xact_lock($1)', [FOLD_LOCK]);
    await db.query('DELETE FROM ledger.report_deltas WHERE card_id = $1', [cardId]);
    await db.query('DELETE FROM ledger.report_days WHERE card_id = $1', [cardId]);
    await db.query('DELETE FROM ledger.report_active WHERE card_id = $1', [cardId]);
    await db.query(
      `INSERT INTO ledger.report_days (tenant_id, card_id, day, event, reward_id, credits, debits, entries)
       SELECT j.tenant_id, j.card_id, (j.created_at AT TIME ZONE c.time_zone)::date,
              ledger.report_event(j.event, j.metadata), coalesce(j.reward_id, 0),
              sum(greatest(j.amount, 0)), sum(least(j.amount, 0)), count(*)
         FROM ledger.journal j JOIN ledger.cards c ON c.id = j.card_id
        WHERE j.card_id = $1 GROUP BY 1, 2, 3, 4, 5`,
      [cardId],
    );
    for (const table of ['report_active_periods', 'report_active_counts', 'report_active_years'])
      await db.query(`DELETE FROM ledger.${table} WHERE card_id = $1`, [cardId]);
    await db.query(
      `WITH active AS (
         INSERT INTO ledger.report_active (card_id, day, member_id)
         SELECT DISTINCT j.card_id, (j.created_at AT TIME ZONE c.time_zone)::date, j.member_id
           FROM ledger.journal j JOIN ledger.cards c ON c.id = j.card_id
          WHERE j.card_id = $1 AND ledger.report_event(j.event, j.metadata) <> 'balance_imported'
         RETURNING card_id, day, member_id),
       ${ACTIVE_ROLLUPS}
       SELECT 1`,
      [cardId],
    );
    await db.query('COMMIT');
  } catch (err) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    db.release();
  }
}

const RebuildParams = z.object({ card_id: z.number().int().optional() });

interface RebuildCheckpoint {
  /** The cards still to rebuild. */
  cards: number[];
}

/**
 * The `reports.rebuild` job: one card per step. A card's rebuild commits on its own (it must see
 * one snapshot), then the step records the card as done; a crash in between rebuilds that card
 * again, which gives the same rollups.
 */
export function rebuildJob(pool: Pool): JobHandler<RebuildCheckpoint> {
  return async (step) => {
    let cards = step.checkpoint?.cards;
    if (!cards) {
      const params = RebuildParams.parse(step.params);
      const { rows } = await pool.query<{ id: string }>(
        'SELECT id FROM ledger.cards WHERE tenant_id = $1 AND ($2::bigint IS NULL OR id = $2) ORDER BY id',
        [step.tenantId, params.card_id ?? null],
      );
      cards = rows.map((r) => Number(r.id));
      await step.commit(undefined, { checkpoint: { cards }, done: 0, total: cards.length });
    }
    const [next, ...rest] = cards;
    if (next === undefined) {
      await step.succeed(undefined, { done: step.done });
      return 'finished';
    }
    await rebuildCard(pool, next);
    await step.commit(undefined, { checkpoint: { cards: rest }, done: step.done + 1 });
    return 'more';
  };
}
