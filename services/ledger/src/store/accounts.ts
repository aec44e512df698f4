import type { OutboxEvent, Queryable } from '@loyalty/runtime';
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

/** One balance movement: the journal row it writes (amounts in cents or points, positive). */
export interface Movement {
  event: JournalEvent;
  amount: number;
  purchaseCents?: number | null;
  reference?: string | null;
  rewardId?: number | null;
  metadata?: Record<string, unknown> | null;
  at: Date;
}

/** The event of a posting; the statement adds `transaction_id`, `previous_balance` and `new_balance` to its data. */
export interface PostingEvent extends OutboxEvent {
  /** Balances in the event: `cents` are written as currency units (12.5), `points` as they are. */
  unit: 'cents' | 'points';
}

export interface PostedEntry extends JournalEntry {
  balance_after: number;
}

// The event's balances and transaction id come from the statement itself, so the balance change,
// the entry count, the journal row and the outbox event are one statement: one round trip, atomic
// without BEGIN/COMMIT, and the account row is touched once.
const EVENT_FROM_ENTRY = `
  event AS (
    INSERT INTO ledger.outbox (id, subject, payload)
    SELECT $11, $12, jsonb_set($13::jsonb, '{data}', ($13::jsonb -> 'data') || jsonb_build_object(
      'transaction_id', entry.id,
      'previous_balance', CASE WHEN $14::boolean THEN to_jsonb(round((entry.balance_after - entry.amount) / 100.0, 2)) ELSE to_jsonb(entry.balance_after - entry.amount) END,
      'new_balance', CASE WHEN $14::boolean THEN to_jsonb(round(entry.balance_after / 100.0, 2)) ELSE to_jsonb(entry.balance_after) END))
    FROM entry
  )
  SELECT id, event, amount, balance_after, created_at FROM entry`;

const JOURNAL_FROM_ACCOUNT = (sign: '' | '-') => `
  entry AS (
    INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, purchase_cents, reference, reward_id, metadata, created_at)
    SELECT $3, $1, $2, $6, ${sign}$4::bigint, account.balance, $7, $8, $9, $10, $5 FROM account
    RETURNING id, event, amount, balance_after, created_at
  ),`;

const POST_CREDIT = `
WITH account AS (
  INSERT INTO ledger.accounts AS a (card_id, member_id, tenant_id, balance, entries, created_at, updated_at) VALUES ($1, $2, $3, $4, 1, $5, $5)
  ON CONFLICT (card_id, member_id) DO UPDATE SET balance = a.balance + EXCLUDED.balance, entries = a.entries + 1, updated_at = EXCLUDED.updated_at
  RETURNING balance
),${JOURNAL_FROM_ACCOUNT('')}${EVENT_FROM_ENTRY}`;

// Check and debit are one condition on the row: concurrent debits serialize on it and none can
// overdraw; an uncovered debit matches no row, so nothing at all is written.
const POST_DEBIT = `
WITH account AS (
  UPDATE ledger.accounts SET balance = balance - $4, entries = entries + 1, updated_at = $5
   WHERE card_id = $1 AND member_id = $2 AND balance >= $4
  RETURNING balance
),${JOURNAL_FROM_ACCOUNT('-')}${EVENT_FROM_ENTRY}`;

/**
 * Credit or debit an account together with its journal row and its outbox event, in one statement
 * (the account is opened on a first credit). A debit the balance does not cover writes nothing and
 * answers undefined. Runs alone (autocommit) or inside the caller's transaction.
 */
export async function post(db: Queryable, k: AccountKey, direction: 'credit' | 'debit', m: Movement, e: PostingEvent): Promise<PostedEntry | undefined> {
  const { rows } = await db.query<PostedEntry>({
    name: direction === 'credit' ? 'ledger.post_credit' : 'ledger.post_debit',
    text: direction === 'credit' ? POST_CREDIT : POST_DEBIT,
    values: [
      k.cardId,
      k.memberId,
      k.tenantId,
      m.amount,
      m.at,
      m.event,
      m.purchaseCents ?? null,
      m.reference ?? null,
      m.rewardId ?? null,
      m.metadata ? JSON.stringify(m.metadata) : null,
      e.id,
      e.subject,
      JSON.stringify(e.envelope),
      e.unit === 'cents',
    ],
  });
  return rows[0];
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
  const { rows } = await db.query<{ balance: number }>({
    name: 'ledger.find_balance',
    text: 'SELECT balance FROM ledger.accounts WHERE card_id = $1 AND member_id = $2',
    values: [cardId, memberId],
  });
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

/** One page of an account's journal ($3 rows from offset $4) with the account's entry count; no row: no account. */
export const JOURNAL_PAGE = `SELECT a.entries AS total, j.id, j.event, j.amount, j.created_at
  FROM ledger.accounts a
  LEFT JOIN LATERAL (
    SELECT id, event, amount, created_at FROM ledger.journal
     WHERE member_id = a.member_id AND card_id = a.card_id ORDER BY id DESC LIMIT $3 OFFSET $4
  ) j ON true
 WHERE a.card_id = $1 AND a.member_id = $2
 ORDER BY j.id DESC`;

/**
 * One page of an account's journal, newest first (index journal_account_history), with the
 * account's number of entries, in one statement. undefined: the member has no account on the card.
 */
export async function journalPage(
  db: Queryable,
  cardId: number,
  memberId: number,
  limit: number,
  offset: number,
): Promise<{ entries: JournalEntry[]; total: number } | undefined> {
  const { rows } = await db.query<{ total: number; id: number | null; event: JournalEvent; amount: number; created_at: Date }>({
    name: 'ledger.journal_page',
    text: JOURNAL_PAGE,
    values: [cardId, memberId, limit, offset],
  });
  if (rows.length === 0) return undefined;
  const entries = rows.filter((r) => r.id !== null).map((r) => ({ id: r.id!, event: r.event, amount: r.amount, created_at: r.created_at }));
  return { entries, total: rows[0]!.total };
}
