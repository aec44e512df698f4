import { createHash } from 'node:crypto';
import { AppError } from '@loyalty/contracts';
import { withTransaction, type Pool, type PoolClient } from './db.ts';

/** Stable JSON (sorted keys) so that the same parameters always hash the same. */
export function stableStringify(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
}

export function requestHash(operation: string, data: unknown): string {
  return createHash('sha256').update(operation).update('\0').update(stableStringify(data)).digest('hex');
}

/**
 * Run a mutating operation under an Idempotency-Key, Stripe style. The key, a hash of the
 * request and the response are stored in the same transaction as the effect, so:
 * - a retry with the same key and parameters replays the stored response and changes nothing;
 * - the same key with other parameters (or on another operation) is refused with 409;
 * - two concurrent requests with one key serialize on the key's row: the second replays;
 * - a failure stores nothing, so a retry runs again.
 * Without a key, `fn` simply runs in a transaction.
 */
export async function runIdempotent<T>(
  pool: Pool,
  opts: { table: string; tenantId: number; key: string | undefined; operation: string; data: unknown },
  fn: (client: PoolClient) => Promise<T>,
): Promise<T> {
  if (!opts.key) return withTransaction(pool, fn);
  const hash = requestHash(opts.operation, opts.data);
  return withTransaction(pool, async (client) => {
    const inserted = await client.query(
      `INSERT INTO ${opts.table} (tenant_id, key, request_hash) VALUES ($1, $2, $3)
       ON CONFLICT (tenant_id, key) DO NOTHING RETURNING key`,
      [opts.tenantId, opts.key, hash],
    );
    if (inserted.rowCount === 0) {
      const { rows } = await client.query<{ request_hash: string; response: T | null }>(
        `SELECT request_hash, response FROM ${opts.table} WHERE tenant_id = $1 AND key = $2`,
        [opts.tenantId, opts.key],
      );
      const row = rows[0];
      if (!row) throw new AppError('idempotency_in_progress');
      if (row.request_hash !== hash) throw new AppError('idempotency_key_reused');
      if (row.response === null) throw new AppError('idempotency_in_progress');
      return row.response;
    }
    const result = await fn(client);
    await client.query(`UPDATE ${opts.table} SET response = $3 WHERE tenant_id = $1 AND key = $2`, [
      opts.tenantId,
      opts.key,
      JSON.stringify(result),
    ]);
    return result;
  });
}
