import { returnedRow } from '@loyalty/runtime';
import type { Queryable } from '@loyalty/runtime';
import type { AccountKey } from '../store/accounts.ts';

/** A reservation of spendable points (or cents) under a key, e.g. `claim:<id>` (see holds.ts). */
export type Hold = {
  id: number;
  tenant_id: number;
  card_id: number;
  member_id: number;
  key: string;
  amount: number;
  expires_at: Date;
  created_at: Date;
  settled_at: Date | null;
} & (
  | { status: 'held' | 'released'; journal_id: null }
  /** A captured hold names the journal row that captured it. */
  | { status: 'captured'; journal_id: number }
);

/** The tenant's hold under `key`; `lock` takes its row lock (after the account's: see store.ts). */
export async function findHold(db: Queryable, tenantId: number, key: string, lock = false): Promise<Hold | undefined> {
  const { rows } = await db.query<Hold>(
    `SELECT * FROM ledger.holds WHERE tenant_id = $1 AND key = $2${lock ? ' FOR UPDATE' : ''}`,
    [tenantId, key],
  );
  return rows[0];
}

/**
 * Reserve `amount` of the locked account's spendable balance: the hold row, balance -> held. The
 * caller takes the amount from the lots next (takeFromLots with the hold's id).
 */
export async function insertHold(
  db: Queryable,
  k: AccountKey,
  h: { key: string; amount: number; expiresAt: Date; at: Date },
): Promise<Hold> {
  await db.query(
    'UPDATE ledger.accounts SET balance = balance - $3, held = held + $3, updated_at = $4 WHERE card_id = $1 AND member_id = $2',
    [k.cardId, k.memberId, h.amount, h.at],
  );
  const { rows } = await db.query<Hold>(
    `INSERT INTO ledger.holds (tenant_id, card_id, member_id, key, amount, status, expires_at, created_at)
     VALUES ($1, $2, $3, $4, $5, 'held', $6, $7) RETURNING *`,
    [k.tenantId, k.cardId, k.memberId, h.key, h.amount, h.expiresAt, h.at],
  );
  return returnedRow(rows, 'ledger.holds insert');
}

/** held -> released: its amount goes back to the spendable balance (the lots: returnToLots). */
export async function markReleased(db: Queryable, hold: Hold, at: Date): Promise<void> {
  await db.query(
    'UPDATE ledger.accounts SET balance = balance + $3, held = held - $3, updated_at = $4 WHERE card_id = $1 AND member_id = $2',
    [hold.card_id, hold.member_id, hold.amount, at],
  );
  await db.query(`UPDATE ledger.holds SET status = 'released', settled_at = $2 WHERE id = $1`, [hold.id, at]);
}

/** held -> captured by the journal row `journalId` (the amount leaves `held`; the lots keep what it took). */
export async function markCaptured(db: Queryable, hold: Hold, journalId: number, at: Date): Promise<void> {
  await db.query('UPDATE ledger.accounts SET held = held - $3, updated_at = $4 WHERE card_id = $1 AND member_id = $2', [
    hold.card_id,
    hold.member_id,
    hold.amount,
    at,
  ]);
  await db.query(`UPDATE ledger.holds SET status = 'captured', journal_id = $2, settled_at = $3 WHERE id = $1`, [
    hold.id,
    journalId,
    at,
  ]);
}

/** Holds still held past their expiry (their claim's lifetime and a margin): the sweeper releases them. */
export async function overdueHolds(
  db: Queryable,
  now: Date,
  limit: number,
): Promise<{ tenant_id: number; key: string }[]> {
  const { rows } = await db.query<{ tenant_id: number; key: string }>(
    `SELECT tenant_id, key FROM ledger.holds WHERE status = 'held' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
    [now, limit],
  );
  return rows;
}
