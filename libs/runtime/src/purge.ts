import type { Clock } from './clock.ts';
import type { Queryable } from './db.ts';
import type { Metrics } from './metrics.ts';

/** Rows of one table of the service's schema that may go: `expired` is an SQL condition, $1 the current time. */
export interface PurgeRule {
  table: string;
  expired: string;
}

/**
 * The shared tables' purge rules (the relay already deletes published outbox rows).
 * - Idempotency records are kept 48 hours: the gateway promises a retry with the same key a replay
 *   for 24 hours, and a day more covers a record written near the end of that window and clock skew.
 * - Processed-event ids are kept 8 days: JetStream keeps events 7 days, so a redelivery can come
 *   that late, and a purged id would let it act a second time.
 * - Job results are kept until their job's `expires_at` (7 days after it finished); finished jobs
 *   themselves 30 days, so their status can still be read after the result has gone.
 */
export const sharedPurgeRules: PurgeRule[] = [
  { table: 'idempotency_keys', expired: `created_at < $1::timestamptz - interval '48 hours'` },
  { table: 'processed_events', expired: `processed_at < $1::timestamptz - interval '8 days'` },
  { table: 'job_results', expired: `expires_at < $1::timestamptz` },
  { table: 'jobs', expired: `finished_at < $1::timestamptz - interval '30 days'` },
];

/** Rows deleted per statement: short statements, short locks, no long transaction. */
export const PURGE_BATCH = 1000;

/**
 * Delete what the rules allow, in batches of `PURGE_BATCH` rows each its own statement. Rows a
 * concurrent pass (another replica) holds are skipped (SKIP LOCKED), so replicas purging at the
 * same time share the work instead of waiting on each other. Answers the rows deleted per table
 * and counts them in `loyalty_purged_rows_total{table}`.
 */
export async function purge(
  db: Queryable,
  schema: string,
  rules: PurgeRule[],
  clock: Clock,
  metrics: Metrics,
): Promise<Record<string, number>> {
  const now = clock.now();
  const deleted: Record<string, number> = {};
  for (const rule of rules) {
    const table = `${schema}.${rule.table}`;
    let total = 0;
    for (;;) {
      const r = await db.query(
        `DELETE FROM ${table} WHERE ctid IN (
           SELECT ctid FROM ${table} WHERE (${rule.expired}) LIMIT ${PURGE_BATCH} FOR UPDATE SKIP LOCKED)`,
        [now],
      );
      const n = r.rowCount ?? 0;
      total += n;
      metrics.purged(rule.table, n);
      if (n < PURGE_BATCH) break;
    }
    deleted[rule.table] = total;
  }
  return deleted;
}
