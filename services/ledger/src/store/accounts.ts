import type { Queryable } from '@loyalty/runtime';
import type { JournalEvent } from '../domain/journal.ts';

/**
 * Accounts (one stored balance per member x card) and their append-only journal. Every balance
 * change goes with exactly one journal row carrying the signed amount, in the same transaction,
 * so an account's balance always equals the sum of its journal.
 */
export interface AccountKey {
  tenantId: number;
  cardId: number;
  memberId: number;
}

export interface JournalEntry {
  id: number;
  event: JournalEvent;
  amount: number;
  created_at: Date;
}

/** Add to a balance, opening the account on first use. Returns the balance before and after. */
export async function credit(db: Queryable, k: AccountKey, amount: number, now: Date): Promise<{ previous: number; balance: number }> {
  const { rows } = await db.query<{ balance: number }>(
    `INSERT INTO ledger.accounts AS a (card_id, member_id, tenant_id, balance, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
     ON CONFLICT (card_id, member_id) DO UPDATE SET balance = a.balance + EXCLUDED.balance, updated_at = EXCLUDED.updated_at
     RETURNING balance`,
    [k.cardId, k.memberId, k.tenantId, amount, now],
  );
  const balance = rows[0]!.balance;
  return { previous: balance - amount, balance };
}

/**
 * Take `amount` from a balance only if it covers it: check and debit are one statement, so
 * concurrent redemptions serialize on the row and none can overdraw. undefined: not covered.
 */
export async function debitIfCovered(db: Queryable, k: AccountKey, amount: number, now: Date): Promise<{ previous: number; balance: number } | undefined> {
  const { rows } = await db.query<{ balance: number }>(
    `UPDATE ledger.accounts SET balance = balance - $3, updated_at = $4
     WHERE card_id = $1 AND member_id = $2 AND balance >= $3 RETURNING balance`,
    [k.cardId, k.memberId, amount, now],
  );
  const row = rows[0];
  return row ? { previous: row.balance + amount, balance: row.balance } : undefined;
}

/** Lock the account row (opening it at 0 if needed) and return its balance: refunds decide under the lock. */
export async function lockAccount(db: Queryable, k: AccountKey, now: Date): Promise<number> {
  await db.query(
    `INSERT INTO ledger.accounts (card_id, member_id, tenant_id, balance, created_at, updated_at) VALUES ($1, $2, $3, 0, $4, $4)
     ON CONFLICT (card_id, member_id) DO NOTHING`,
    [k.cardId, k.memberId, k.tenantId, now],
  );
  const { rows } = await db.query<{ balance: number }>('SELECT balance FROM ledger.accounts WHERE card_id = $1 AND member_id = $2 FOR UPDATE', [
    k.cardId,
    k.memberId,
  ]);
  return rows[0]!.balance;
}

/** Set a locked account's balance (after `lockAccount`). */
export async function setBalance(db: Queryable, k: AccountKey, balance: number, now: Date): Promise<void> {
  await db.query('UPDATE ledger.accounts SET balance = $3, updated_at = $4 WHERE card_id = $1 AND member_id = $2', [k.cardId, k.memberId, balance, now]);
}

/** undefined: the member has never had an account on the card. */
export async function findBalance(db: Queryable, cardId: number, memberId: number): Promise<number | undefined> {
  const { rows } = await db.query<{ balance: number }>('SELECT balance FROM ledger.accounts WHERE card_id = $1 AND member_id = $2', [cardId, memberId]);
  return rows[0]?.balance;
}

export async function appendJournal(
  db: Queryable,
  k: AccountKey,
  e: {
    event: JournalEvent;
    amount: number;
    balanceAfter: number;
    purchaseCents?: number | null;
    reference?: string | null;
    rewardId?: number | null;
    metadata?: Record<string, unknown> | null;
    at: Date;
  },
): Promise<JournalEntry> {
  // The account row is already locked by the balance change of this transaction; its entry count
  // moves with the journal so a history's total never has to count rows.
  const { rows } = await db.query<JournalEntry>(
    `WITH entry AS (
       INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, purchase_cents, reference, reward_id, metadata, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id, event, amount, created_at
     ), counted AS (
       UPDATE ledger.accounts SET entries = entries + 1 WHERE card_id = $2 AND member_id = $3
     )
     SELECT * FROM entry`,
    [
      k.tenantId,
      k.cardId,
      k.memberId,
      e.event,
      e.amount,
      e.balanceAfter,
      e.purchaseCents ?? null,
      e.reference ?? null,
      e.rewardId ?? null,
      e.metadata ? JSON.stringify(e.metadata) : null,
      e.at,
    ],
  );
  return rows[0]!;
}

/** The earn that used `reference` on the card, if any. */
export async function earnByReference(db: Queryable, cardId: number, reference: string): Promise<{ id: number; member_id: number; amount: number } | undefined> {
  const { rows } = await db.query<{ id: number; member_id: number; amount: number }>(
    `SELECT id, member_id, amount FROM ledger.journal
     WHERE card_id = $1 AND reference = $2 AND event IN ('cashback_earned', 'staff_added_points')`,
    [cardId, reference],
  );
  return rows[0];
}

/** What refunds naming `reference` have already deducted from the member on the card (positive). */
export async function refundedOnReference(db: Queryable, k: AccountKey, reference: string): Promise<number> {
  const { rows } = await db.query<{ total: number }>(
    `SELECT COALESCE(-sum(amount), 0)::bigint AS total FROM ledger.journal
     WHERE card_id = $1 AND reference = $2 AND member_id = $3 AND event IN ('cashback_refunded', 'points_refunded')`,
    [k.cardId, reference, k.memberId],
  );
  return rows[0]!.total;
}

/** One page of an account's journal, newest first (index journal_account_history), and the account's number of entries. */
export async function journalPage(db: Queryable, cardId: number, memberId: number, limit: number, offset: number): Promise<{ entries: JournalEntry[]; total: number }> {
  const [page, count] = await Promise.all([
    db.query<JournalEntry>(
      `SELECT id, event, amount, created_at FROM ledger.journal WHERE member_id = $1 AND card_id = $2 ORDER BY id DESC LIMIT $3 OFFSET $4`,
      [memberId, cardId, limit, offset],
    ),
    db.query<{ n: number }>('SELECT entries AS n FROM ledger.accounts WHERE card_id = $1 AND member_id = $2', [cardId, memberId]),
  ]);
  return { entries: page.rows, total: count.rows[0]?.n ?? 0 };
}
