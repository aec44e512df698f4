import { returnedRow } from '@loyalty/runtime';
import type { OutboxEvent, Queryable } from '@loyalty/runtime';
import type { JournalEvent } from '../domain/journal.ts';
import type { LotTerms } from '../lots/terms.ts';
import { MAX_BALANCE } from '../domain/money.ts';

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

/** Events of imported past transactions (history_entries: shown in the history, not in the books). */
export type ImportedEvent =
  'imported_earned' | 'imported_redeemed' | 'imported_refunded' | 'imported_expired' | 'imported_adjusted';

export interface JournalEntry {
  id: number;
  event: JournalEvent | ImportedEvent;
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
  /** A credit's lot: when it becomes spendable and when it expires (lots/terms.ts). Debits have none. */
  lot?: LotTerms;
  /**
   * An earn on a card with earning rules: the rule versions behind the amount and what each line
   * earned, written to journal_rules by the same statement (store/rules.ts reads them).
   */
  rules?: { rules: unknown[]; allocation: unknown };
  /** A credit on a card with tiers: what the member qualifies with, decided by the same statement. */
  tier?: TierMove;
}

/**
 * What a credit on a card with tiers does to the member's tier, in its posting statement: add
 * `delta` to the member's qualifying day and total, and upgrade the member at once when the total
 * of the current window reaches a higher entry threshold (with its `tier_upgraded` event).
 */
export interface TierMove {
  /** Points or cents the member qualifies with (0: none, the tier is only read). */
  delta: number;
  /** The local date of the movement in the card's time zone (YYYY-MM-DD). */
  day: string;
  window: string;
  windowDays: number;
  validityDays: number | null;
  warningDays: number;
  timeZone: string;
  /** The lowest rank of the ladder (every member starts there). */
  lowest: number;
  /**
   * The member's rank (null: no row) that the earn's rules were evaluated with, read before the
   * posting: the statement writes nothing when the member's committed rank is another (the caller
   * evaluates again). Undefined: nothing was assumed.
   */
  assumedRank?: number | null;
  /**
   * The subject and type of the `tier_upgraded` event the statement writes if it upgrades the
   * member (its id, time, tenant and data made there: member, card, from, to, valid_until).
   */
  upgrade: { subject: string; type: string };
}

/** What the posting statement answers of a member's tier (credits on cards with tiers). */
export interface PostedTier {
  rank: number;
  prevRank: number;
  validUntil: Date | null;
}

/** The event of a posting; the statement adds `transaction_id`, `previous_balance` and `new_balance` to its data. */
export interface PostingEvent extends OutboxEvent {
  /** Balances in the event: `cents` are written as currency units (12.5), `points` as they are. */
  unit: 'cents' | 'points';
}

export interface PostedEntry extends JournalEntry {
  /** The spendable balance after the posting. */
  balance_after: number;
  /** The member's tier after the posting (credits that carried a TierMove). */
  tier?: PostedTier;
}

/** One posting of a statement: the account, the movement and its event. */
export interface Posting {
  account: AccountKey;
  movement: Movement;
  event: PostingEvent;
}

// Postings as parallel arrays (one element per posting, `n` its position). The balance change, the
// entry count, the journal row, the credit's lot (or the lots a debit takes) and the outbox event
// (its balances and transaction id filled in by SQL) of every posting are one statement: one round
// trip and one commit for all of them, atomic without BEGIN/COMMIT, and each account row is
// touched once. An account may appear only once per statement (ON CONFLICT DO UPDATE cannot
// change a row twice): callers split batches (see posting-batcher.ts).
// The JSON columns (metadata, the event's envelope, the earning rules, the tier move) come as one
// JSON array each, element n - 1 the posting's (JSON null: none), not as arrays of JSON texts: the
// driver would escape every quote of every text into an array literal (a ruled earn's rules and
// allocation are kilobytes of them) and PostgreSQL would unescape them again.
const INPUT = `input AS (
  SELECT i.*, NULLIF($10::jsonb -> (i.n::integer - 1), 'null') AS metadata, $13::jsonb -> (i.n::integer - 1) AS envelope,
         NULLIF($19::jsonb -> (i.n::integer - 1), 'null') AS rules, NULLIF($21::jsonb -> (i.n::integer - 1), 'null') AS tier
    FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::timestamptz[], $6::text[], $7::bigint[], $8::text[], $9::bigint[],
                $11::uuid[], $12::text[], $14::boolean[], $15::boolean[], $16::timestamptz[], $17::timestamptz[], $18::timestamptz[], $20::text[])
    WITH ORDINALITY AS i(card_id, member_id, tenant_id, amount, at, event, purchase_cents, reference, reward_id, event_id, subject, cents,
                         pending, available_at, expires_at, warn_at, trace, n)
)`;

// A credit opens the account on first use and adds to its spendable balance, or to `pending` while
// its lot waits for available_at. Check and credit are one condition on the row, as for a debit: a
// credit that would take the account past MAX_BALANCE matches no row (concurrent credits serialize
// on the row, so none can slip past it together), and nothing at all is written for it. Every term
// is at most MAX_BALANCE, so the sum cannot overflow int8. next_change_at moves earlier only.
// Nor does a credit reach a member merged away (member-merge.ts): its accounts carry `merged_into`
// (read on the locked row, so a credit that waited on the merge's lock sees it), and a new account
// is not opened for a source in `merged_members`.
// Nor is a credit written whose tier move assumed a rank (`r`: the rank the earn's rules with a
// tier condition were evaluated with, read before the statement) the member no longer holds: its
// caller evaluates the earn again with the committed rank (accounting.ts, products/flow.ts).
const CREDIT = `account AS (
  INSERT INTO ledger.accounts AS a (card_id, member_id, tenant_id, balance, pending, entries, next_change_at, created_at, updated_at)
  SELECT card_id, member_id, tenant_id, CASE WHEN pending THEN 0 ELSE amount END, CASE WHEN pending THEN amount ELSE 0 END, 1,
         CASE WHEN amount = 0 THEN NULL WHEN pending THEN available_at ELSE expires_at END, at, at
    FROM input WHERE amount <= ${MAX_BALANCE}
     AND NOT EXISTS (SELECT 1 FROM ledger.merged_members mm WHERE mm.source_member_id = input.member_id)
     AND (input.tier IS NULL OR NOT input.tier ? 'r' OR input.tier -> 'r' = COALESCE((SELECT to_jsonb(mt.rank)
            FROM ledger.member_tiers mt WHERE mt.card_id = input.card_id AND mt.member_id = input.member_id), 'null'::jsonb))
   ORDER BY n
  ON CONFLICT (card_id, member_id) DO UPDATE SET balance = a.balance + EXCLUDED.balance, pending = a.pending + EXCLUDED.pending,
     entries = a.entries + 1, updated_at = EXCLUDED.updated_at, next_change_at = LEAST(a.next_change_at, EXCLUDED.next_change_at)
   WHERE a.balance + a.pending + a.held + EXCLUDED.balance + EXCLUDED.pending <= ${MAX_BALANCE} AND a.merged_into IS NULL
  RETURNING card_id, member_id, balance, created_at
)`;

// A credit carrying a tier move (a card with tiers): the member's qualifying day and window total
// grow and, when the total reaches a higher entry threshold, the member is upgraded at once, all
// under the account row lock the credit took (concurrent credits of a member serialize on it, and
// ON CONFLICT DO UPDATE reads the latest member_tiers row, so two crossings upgrade once). The
// window total is a counter kept from the window start of the member's last movement; moving it to
// today's window reads only days before today (tier_rolled, migration 30). Lowest rank first.
//
// ledger.tier_rank_for and ledger.tier_rolled (migration 30) are written out here: PostgreSQL 15
// plans the body of a SQL function it cannot inline at every execution of the statement that
// calls it, where the statement's own subqueries are planned once with the prepared statement.
const rankFor = (card: string, total: string) =>
  `(SELECT max(s.rank) FROM ledger.tiers s WHERE s.card_id = ${card} AND s.entry_threshold <= GREATEST(${total}, 0))`;
const ROLLED = `CASE WHEN m.counted_from = EXCLUDED.counted_from THEN m.qualifying
    WHEN m.counted_from < EXCLUDED.counted_from THEN m.qualifying - COALESCE((SELECT sum(d.amount) FROM ledger.tier_days d
      WHERE d.card_id = m.card_id AND d.member_id = m.member_id AND d.day >= m.counted_from AND d.day < EXCLUDED.counted_from), 0)::bigint
    ELSE m.qualifying + COALESCE((SELECT sum(d.amount) FROM ledger.tier_days d
      WHERE d.card_id = m.card_id AND d.member_id = m.member_id AND d.day >= EXCLUDED.counted_from AND d.day < m.counted_from), 0)::bigint END`;
const TIER = (outboxTable: string) => `tq AS (
  SELECT i.n, i.card_id, i.member_id, i.tenant_id, i.at, i.tier AS t, (i.tier ->> 'd')::bigint AS delta, (i.tier ->> 'day')::date AS day,
         (a.created_at AT TIME ZONE (i.tier ->> 'tz'))::date AS joined
    FROM input i JOIN account a USING (card_id, member_id) WHERE i.tier IS NOT NULL
), tw AS (
  SELECT tq.*, ledger.tier_window_start(t ->> 'k', (t ->> 'n')::integer, day, joined) AS ws,
         ledger.tier_upgrade_until(t ->> 'k', (t ->> 'n')::integer, (t ->> 'v')::integer, day, joined)::timestamp AT TIME ZONE (t ->> 'tz') AS vu,
         (t ->> 'w')::integer AS warn_days, (t ->> 'low')::integer AS low
    FROM tq
), tday AS (
  INSERT INTO ledger.tier_days AS d (card_id, member_id, day, amount)
  SELECT card_id, member_id, day, delta FROM tw WHERE delta <> 0 ORDER BY n
  ON CONFLICT (card_id, member_id, day) DO UPDATE SET amount = d.amount + EXCLUDED.amount
), tier AS (
  INSERT INTO ledger.member_tiers AS m (card_id, member_id, tenant_id, rank, prev_rank, valid_until, warn_at, joined_on, qualifying, counted_from, updated_at)
  SELECT w.card_id, w.member_id, w.tenant_id, r.rank, w.low, CASE WHEN r.rank > w.low THEN w.vu END,
         CASE WHEN r.rank > w.low THEN w.vu - make_interval(days => w.warn_days) END, w.joined, w.delta, w.ws, w.at
    FROM tw w CROSS JOIN LATERAL (SELECT GREATEST(w.low, COALESCE(${rankFor('w.card_id', 'w.delta')}, w.low)) AS rank) r
   ORDER BY w.n
  ON CONFLICT (card_id, member_id) DO UPDATE SET
    (qualifying, counted_from, prev_rank, rank, valid_until, warn_at, manual_reason, updated_at) = (
      SELECT q.total, EXCLUDED.counted_from, m.rank, GREATEST(m.rank, q.reach),
             CASE WHEN q.reach > m.rank THEN w.vu ELSE m.valid_until END,
             CASE WHEN q.reach > m.rank THEN w.vu - make_interval(days => w.warn_days) ELSE m.warn_at END,
             CASE WHEN q.reach > m.rank THEN NULL ELSE m.manual_reason END,
             EXCLUDED.updated_at
        FROM tw w
        CROSS JOIN LATERAL (SELECT ${ROLLED} + EXCLUDED.qualifying AS total) t
        CROSS JOIN LATERAL (SELECT t.total, COALESCE(${rankFor('m.card_id', 't.total')}, m.rank) AS reach) q
       WHERE w.card_id = m.card_id AND w.member_id = m.member_id)
  RETURNING card_id, member_id, rank, prev_rank, valid_until
), tier_event AS (
  INSERT INTO ${outboxTable} (id, subject, payload)
  SELECT v.id, v.subject, jsonb_build_object('id', v.id, 'type', v.type, 'tenant_id', v.tenant_id,
           'occurred_at', to_char(v.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'data', v.data)
    -- One id per upgrade: a volatile call in a subquery's select list is made for each of its rows
    -- (one in a FROM item of its own may be made once for the whole statement).
    FROM (SELECT gen_random_uuid() AS id, w.t -> 'ev' ->> 's' AS subject, w.t -> 'ev' -> 't' AS type, w.tenant_id, w.at,
                 jsonb_build_object('member_id', w.member_id, 'card_id', w.card_id, 'reason', 'qualified',
                   'from', f.name, 'to', g.name, 'from_rank', x.prev_rank, 'to_rank', x.rank,
                   'valid_until', to_char(x.valid_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                   'transaction_id', e.id) AS data
            FROM tier x JOIN tw w USING (card_id, member_id) JOIN entry e USING (card_id, member_id)
            LEFT JOIN ledger.tiers f ON f.card_id = x.card_id AND f.rank = x.prev_rank
            LEFT JOIN ledger.tiers g ON g.card_id = x.card_id AND g.rank = x.rank
           WHERE x.rank > x.prev_rank) v
)`;

// Check and debit are one condition on the row: concurrent debits serialize on it and none can
// overdraw; an uncovered debit matches no row, so nothing at all is written for it. Nor is one on
// an account that time has changed since it was last settled (a lot expired or matured): the
// caller settles it and posts again (accounting.ts). take_from_lots (migration 5) then takes the
// amount from the account's spendable lots, under the row lock just taken.
const DEBIT = `account AS (
  UPDATE ledger.accounts a SET balance = a.balance - i.amount, entries = a.entries + 1, updated_at = i.at
    FROM input i
   WHERE a.card_id = i.card_id AND a.member_id = i.member_id AND a.balance >= i.amount
     AND (a.next_change_at IS NULL OR a.next_change_at > i.at)
  RETURNING a.card_id, a.member_id, a.balance
), taken AS (
  SELECT ledger.take_from_lots(array_agg(a.card_id), array_agg(a.member_id), array_agg(i.amount)) AS accounts
    FROM account a JOIN input i USING (card_id, member_id)
)`;

const ENTRY_AND_EVENT = (direction: 'credit' | 'debit', outboxTable: string) => `entry AS (
  INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, purchase_cents, reference, reward_id, metadata, created_at)
  SELECT i.tenant_id, i.card_id, i.member_id, i.event, ${direction === 'credit' ? '' : '-'}i.amount, a.balance, i.purchase_cents, i.reference, i.reward_id, i.metadata, i.at
    FROM input i JOIN account a USING (card_id, member_id)${direction === 'debit' ? ' CROSS JOIN taken' : ''} ORDER BY i.n
  RETURNING id, card_id, member_id, event, amount, balance_after, created_at
), ${
  direction === 'credit'
    ? `lot AS (
  INSERT INTO ledger.lots (tenant_id, card_id, member_id, journal_id, amount, remaining, pending, available_at, expires_at, warn_at, created_at)
  SELECT i.tenant_id, i.card_id, i.member_id, e.id, i.amount, i.amount, i.pending, i.available_at, i.expires_at, i.warn_at, i.at
    FROM entry e JOIN input i USING (card_id, member_id) WHERE i.amount > 0
), `
    : ''
}rules AS (
  INSERT INTO ledger.journal_rules (journal_id, card_id, member_id, rules, allocation)
  SELECT e.id, i.card_id, i.member_id, i.rules -> 'rules', i.rules -> 'allocation'
    FROM entry e JOIN input i USING (card_id, member_id) WHERE i.rules IS NOT NULL
), event AS (
  INSERT INTO ${outboxTable} (id, subject, payload, trace)
  SELECT i.event_id, i.subject, jsonb_set(i.envelope, '{data}', (i.envelope -> 'data') || jsonb_build_object(
      'transaction_id', e.id,
      'previous_balance', CASE WHEN i.cents THEN to_jsonb(round((e.balance_after - p.change) / 100.0, 2)) ELSE to_jsonb(e.balance_after - p.change) END,
      'new_balance', CASE WHEN i.cents THEN to_jsonb(round(e.balance_after / 100.0, 2)) ELSE to_jsonb(e.balance_after) END)), i.trace
    FROM entry e JOIN input i USING (card_id, member_id)
    -- What the posting changed of the spendable balance: nothing for a credit that is pending.
    CROSS JOIN LATERAL (SELECT CASE WHEN i.pending THEN 0 ELSE e.amount END AS change) p
)${
  direction === 'credit'
    ? `, ${TIER(outboxTable)}
SELECT i.n, e.id, e.event, e.amount, e.balance_after, e.created_at, x.rank AS tier_rank, x.prev_rank AS tier_prev_rank, x.valid_until AS tier_valid_until
  FROM entry e JOIN input i USING (card_id, member_id) LEFT JOIN tier x USING (card_id, member_id)`
    : `
SELECT i.n, e.id, e.event, e.amount, e.balance_after, e.created_at, NULL::integer AS tier_rank, NULL::integer AS tier_prev_rank,
       NULL::timestamptz AS tier_valid_until
  FROM entry e JOIN input i USING (card_id, member_id)`
}`;

/**
 * The posting statement of a direction. Its events go to `outboxTable` (the ledger's outbox; a
 * caller whose events must never be relayed, such as the benchmark's direct baseline, names a
 * table of its own with the same columns).
 */
export function postingStatement(direction: 'credit' | 'debit', outboxTable = 'ledger.outbox'): string {
  return `WITH ${INPUT}, ${direction === 'credit' ? CREDIT : DEBIT}, ${ENTRY_AND_EVENT(direction, outboxTable)}`;
}

const STATEMENTS = { credit: postingStatement('credit'), debit: postingStatement('debit') };

/** The statement's parameters for `postings` (parallel arrays; the JSON columns as one JSON array each). */
function postingValues(postings: Posting[]): unknown[] {
  return [
    postings.map((p) => p.account.cardId),
    postings.map((p) => p.account.memberId),
    postings.map((p) => p.account.tenantId),
    postings.map((p) => p.movement.amount),
    postings.map((p) => p.movement.at),
    postings.map((p) => p.movement.event),
    postings.map((p) => p.movement.purchaseCents ?? null),
    postings.map((p) => p.movement.reference ?? null),
    postings.map((p) => p.movement.rewardId ?? null),
    JSON.stringify(postings.map((p) => p.movement.metadata ?? null)),
    postings.map((p) => p.event.id),
    postings.map((p) => p.event.subject),
    JSON.stringify(postings.map((p) => p.event.envelope)),
    postings.map((p) => p.event.unit === 'cents'),
    postings.map((p) => p.movement.lot?.pending ?? false),
    postings.map((p) => p.movement.lot?.availableAt ?? p.movement.at),
    postings.map((p) => p.movement.lot?.expiresAt ?? null),
    postings.map((p) => p.movement.lot?.warnAt ?? null),
    JSON.stringify(postings.map((p) => p.movement.rules ?? null)),
    postings.map((p) => p.event.trace ?? null),
    JSON.stringify(postings.map((p) => (p.movement.tier ? tierParameter(p.movement.tier) : null))),
  ];
}

/** A tier move as the posting statement reads it (short keys: it rides in every earn on a card with tiers). */
function tierParameter(t: TierMove) {
  return {
    d: t.delta,
    day: t.day,
    k: t.window,
    n: t.windowDays,
    v: t.validityDays,
    w: t.warningDays,
    tz: t.timeZone,
    low: t.lowest,
    ...(t.assumedRank === undefined ? {} : { r: t.assumedRank }),
    ev: { s: t.upgrade.subject, t: t.upgrade.type },
  };
}

/**
 * Credit (opening accounts as needed, each credit a lot) or debit (only where the spendable
 * balance covers it, taking from the lots) accounts, each with its journal row and outbox event,
 * in one statement, alone (autocommit) or inside the caller's transaction. Answers in the order
 * of `postings`; undefined: a debit its balance did not cover (or on an account due a settle), or
 * a credit that would pass MAX_BALANCE, for which nothing was written. No account may appear
 * twice. `statement`: another text of `postingStatement` (with its own prepared-statement name).
 */
export async function postMany(
  db: Queryable,
  direction: 'credit' | 'debit',
  postings: Posting[],
  statement: { name: string; text: string } = { name: `ledger.post_${direction}`, text: STATEMENTS[direction] },
): Promise<(PostedEntry | undefined)[]> {
  const { rows } = await db.query<
    PostedEntry & { n: number; tier_rank: number | null; tier_prev_rank: number | null; tier_valid_until: Date | null }
  >({ ...statement, values: postingValues(postings) });
  const byPosition = new Map(rows.map((r) => [Number(r.n), r]));
  return postings.map((_, i) => {
    const r = byPosition.get(i + 1);
    if (r === undefined) return undefined;
    const entry: PostedEntry = {
      id: r.id,
      event: r.event,
      amount: r.amount,
      balance_after: r.balance_after,
      created_at: r.created_at,
    };
    if (r.tier_rank !== null && r.tier_prev_rank !== null)
      entry.tier = { rank: r.tier_rank, prevRank: r.tier_prev_rank, validUntil: r.tier_valid_until };
    return entry;
  });
}

/** Set a locked account's spendable and pending amounts (after `lockAccount`, lots/store.ts). */
export async function setAmounts(
  db: Queryable,
  k: AccountKey,
  amounts: { balance: number; pending: number },
  now: Date,
): Promise<void> {
  await db.query(
    'UPDATE ledger.accounts SET balance = $3, pending = $4, updated_at = $5 WHERE card_id = $1 AND member_id = $2',
    [k.cardId, k.memberId, amounts.balance, amounts.pending, now],
  );
}

/** The account's spendable balance and when time next changes it; undefined: no account. */
export async function accountOf(
  db: Queryable,
  k: AccountKey,
): Promise<{ balance: number; next_change_at: Date | null } | undefined> {
  const { rows } = await db.query<{ balance: number; next_change_at: Date | null }>(
    'SELECT balance, next_change_at FROM ledger.accounts WHERE card_id = $1 AND member_id = $2',
    [k.cardId, k.memberId],
  );
  return rows[0];
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
  return returnedRow(rows, 'ledger.journal insert');
}

/** The earn that used `reference` on the card, if any. */
export async function earnByReference(
  db: Queryable,
  cardId: number,
  reference: string,
): Promise<{ id: number; member_id: number; amount: number } | undefined> {
  const { rows } = await db.query<{ id: number; member_id: number; amount: number }>(
    `SELECT id, member_id, amount FROM ledger.journal
     WHERE card_id = $1 AND reference = $2 AND event IN ('cashback_earned', 'staff_added_points')`,
    [cardId, reference],
  );
  return rows[0];
}

/**
 * Whether `reference` names an earn on another card of the tenant (references are unique per card
 * only, so this is asked only when the card itself has no earn with it).
 */
export async function earnedOnOtherCard(
  db: Queryable,
  tenantId: number,
  cardId: number,
  reference: string,
): Promise<boolean> {
  // Per card of the tenant, each an index lookup on journal_earn_reference.
  const { rows } = await db.query(
    `SELECT 1 FROM ledger.cards c
      WHERE c.tenant_id = $1 AND c.id <> $2
        AND EXISTS (SELECT 1 FROM ledger.journal j WHERE j.card_id = c.id AND j.reference = $3
                       AND j.event IN ('cashback_earned', 'staff_added_points'))
      LIMIT 1`,
    [tenantId, cardId, reference],
  );
  return rows.length > 0;
}

/** What refunds naming `reference` have already deducted from the member on the card (positive). */
export async function refundedOnReference(db: Queryable, k: AccountKey, reference: string): Promise<number> {
  const { rows } = await db.query<{ total: number }>(
    `SELECT COALESCE(-sum(amount), 0)::bigint AS total FROM ledger.journal
     WHERE card_id = $1 AND reference = $2 AND member_id = $3 AND event IN ('cashback_refunded', 'points_refunded')`,
    [k.cardId, reference, k.memberId],
  );
  return returnedRow(rows, 'refunded on reference').total;
}

/** One page of an account's journal ($3 rows from offset $4) with the account's entry count; no row: no account. */
export const JOURNAL_PAGE = `SELECT a.entries AS total, a.imported_entries, a.next_change_at, j.id, j.event, j.amount, j.created_at
  FROM ledger.accounts a
  LEFT JOIN LATERAL (
    SELECT id, event, amount, created_at FROM ledger.journal
     WHERE member_id = a.member_id AND card_id = a.card_id ORDER BY id DESC LIMIT $3 OFFSET $4
  ) j ON true
 WHERE a.card_id = $1 AND a.member_id = $2
 ORDER BY j.id DESC`;

/**
 * One page of an account's journal, newest first (index journal_account_history), with the
 * account's number of entries (and when time next changes the account), in one statement. undefined: the member has no account on the card.
 */
export async function journalPage(
  db: Queryable,
  cardId: number,
  memberId: number,
  limit: number,
  offset: number,
): Promise<{ entries: JournalEntry[]; total: number; imported: number; next_change_at: Date | null } | undefined> {
  const { rows } = await db.query<{
    total: number;
    imported_entries: number;
    next_change_at: Date | null;
    id: number | null;
    event: JournalEvent;
    amount: number;
    created_at: Date;
  }>({
    name: 'ledger.journal_page',
    text: JOURNAL_PAGE,
    values: [cardId, memberId, limit, offset],
  });
  const account = rows[0];
  if (account === undefined) return undefined;
  const entries: JournalEntry[] = [];
  for (const r of rows)
    if (r.id !== null) entries.push({ id: r.id, event: r.event, amount: r.amount, created_at: r.created_at });
  return { entries, total: account.total, imported: account.imported_entries, next_change_at: account.next_change_at };
}

/**
 * Imported past transactions of an account (history_entries), newest first: they follow the
 * journal's rows in a history, so `offset` counts from the first of them.
 */
export async function importedHistoryPage(
  db: Queryable,
  cardId: number,
  memberId: number,
  limit: number,
  offset: number,
): Promise<JournalEntry[]> {
  const { rows } = await db.query<{ id: number; event: ImportedEvent; amount: number; occurred_at: Date }>(
    `SELECT id, event, amount, occurred_at FROM ledger.history_entries
      WHERE member_id = $2 AND card_id = $1 ORDER BY occurred_at DESC, id DESC LIMIT $3 OFFSET $4`,
    [cardId, memberId, limit, offset],
  );
  return rows.map((r) => ({ id: r.id, event: r.event, amount: r.amount, created_at: r.occurred_at }));
}
