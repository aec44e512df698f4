import { AppError } from '@loyalty/contracts';
import { requestHash, type Queryable } from '@loyalty/runtime';

/**
 * Idempotency-Key records of apply. Apply spans several transactions (the referral row is
 * committed before the ledger is called), so the key is not held open around the work as
 * runIdempotent does: a stored response is looked up first and written in the same transaction
 * that finishes the apply. A failure stores nothing, so a retry runs (and finishes) again.
 */
export interface StoredReply {
  message: string;
  data: unknown;
}

export async function storedReply(
  db: Queryable,
  tenantId: number,
  key: string,
  operation: string,
  data: unknown,
): Promise<StoredReply | undefined> {
  const { rows } = await db.query<{ request_hash: string; response: StoredReply | null }>(
    `SELECT request_hash, response FROM referrals.idempotency_keys WHERE tenant_id = $1 AND key = $2`,
    [tenantId, key],
  );
  const row = rows[0];
  if (!row) return undefined;
  if (row.request_hash !== requestHash(operation, data)) throw new AppError('idempotency_key_reused');
  return row.response ?? undefined;
}

export async function storeReply(
  db: Queryable,
  tenantId: number,
  key: string,
  operation: string,
  data: unknown,
  reply: StoredReply,
): Promise<void> {
  await db.query(
    `INSERT INTO referrals.idempotency_keys (tenant_id, key, request_hash, response) VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id, key) DO NOTHING`,
    [tenantId, key, requestHash(operation, data), JSON.stringify(reply)],
  );
}
