import { returnedRow, type Queryable } from '@loyalty/runtime';
import type { AccountKey } from '../store/accounts.ts';

/** A stored transfer with the answer it was given (a retry with its reference is answered so). */
export interface TransferRow {
  id: number;
  from_member_id: number;
  to_member_id: number;
  points: number;
  answer: Record<string, unknown>;
}

/** A lot a transfer or a merge made for its receiver, with the dates it kept. */
export interface MovedLot {
  moved: number;
  available_at: Date;
  expires_at: Date | null;
}

export async function findTransfer(db: Queryable, cardId: number, reference: string): Promise<TransferRow | undefined> {
  const { rows } = await db.query<TransferRow>(
    'SELECT id, from_member_id, to_member_id, points, answer FROM ledger.transfers WHERE card_id = $1 AND reference = $2',
    [cardId, reference],
  );
  return rows[0];
}

/**
 * What the member sent on the card since the calendar month of `at` began in `timeZone`. The
 * sender's account lock serializes their transfers, so the sum cannot be raced.
 */
export async function sentThisMonth(
  db: Queryable,
  cardId: number,
  memberId: number,
  timeZone: string,
  at: Date,
): Promise<number> {
  const { rows } = await db.query<{ sent: number }>(
    `SELECT COALESCE(sum(points), 0)::bigint AS sent FROM ledger.transfers
      WHERE card_id = $1 AND from_member_id = $2
        AND created_at >= (date_trunc('month', $3::timestamptz AT TIME ZONE $4) AT TIME ZONE $4)`,
    [cardId, memberId, at, timeZone],
  );
  return Number(returnedRow(rows, 'transfers sent this month').sent);
}

/** Move `amount` of the sender's spendable lots to the receiver, soonest-expiring first (migration 45). */
export async function moveSpendableLots(
  db: Queryable,
  from: AccountKey,
  toMemberId: number,
  amount: number,
  at: Date,
): Promise<MovedLot[]> {
  const { rows } = await db.query<MovedLot>(
    'SELECT moved, available_at, expires_at FROM ledger.move_spendable_lots($1, $2, $3, $4, $5, $6)',
    [from.cardId, from.memberId, toMemberId, from.tenantId, amount, at],
  );
  return rows.map((r) => ({ ...r, moved: Number(r.moved) }));
}

/**
 * Change a locked account's spendable balance by `delta`; `expiresFrom` (the earliest expiry of
 * lots it received) moves its next change earlier, never later.
 */
export async function addToBalance(
  db: Queryable,
  k: AccountKey,
  delta: number,
  at: Date,
  expiresFrom: Date | null = null,
): Promise<void> {
  await db.query(
    `UPDATE ledger.accounts SET balance = balance + $3, updated_at = $4,
            next_change_at = CASE WHEN $5::timestamptz IS NULL THEN next_change_at ELSE LEAST(next_change_at, $5::timestamptz) END
      WHERE card_id = $1 AND member_id = $2`,
    [k.cardId, k.memberId, delta, at, expiresFrom],
  );
}

/** A new transfer's id, taken before its row is written (its answer names it). */
export async function nextTransferId(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ id: number }>("SELECT nextval('ledger.transfers_id_seq') AS id");
  return Number(returnedRow(rows, 'transfer id').id);
}

export async function insertTransfer(
  db: Queryable,
  t: {
    id: number;
    tenantId: number;
    cardId: number;
    fromMemberId: number;
    toMemberId: number;
    points: number;
    reference: string;
    outJournalId: number;
    inJournalId: number;
    answer: Record<string, unknown>;
    at: Date;
  },
): Promise<number> {
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO ledger.transfers (id, tenant_id, card_id, from_member_id, to_member_id, points, reference, out_journal_id, in_journal_id, answer, created_at)
     VALUES ($11, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
    [
      t.tenantId,
      t.cardId,
      t.fromMemberId,
      t.toMemberId,
      t.points,
      t.reference,
      t.outJournalId,
      t.inJournalId,
      JSON.stringify(t.answer),
      t.at,
      t.id,
    ],
  );
  return Number(returnedRow(rows, 'ledger.transfers insert').id);
}
