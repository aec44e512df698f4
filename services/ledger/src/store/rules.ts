import { returnedRow, type Queryable } from '@loyalty/runtime';
import type { EarnAllocation, RuleDefinition, RuleStatus } from '../domain/rules/index.ts';

/** A rule with its current version's definition. */
export interface RuleRow {
  id: number;
  tenant_id: number;
  card_id: number;
  status: RuleStatus;
  version: number;
  budget_used: number;
  definition: RuleDefinition;
  created_at: Date;
  updated_at: Date;
}

const RULE = `r.id, r.tenant_id, r.card_id, r.status, r.version, r.budget_used, v.definition, r.created_at, r.updated_at
  FROM ledger.rules r JOIN ledger.rule_versions v ON v.rule_id = r.id AND v.version = r.version`;

export async function insertRule(
  db: Queryable,
  r: { tenantId: number; cardId: number; status: RuleStatus; definition: RuleDefinition; at: Date },
): Promise<RuleRow> {
  const { rows } = await db.query<{ id: number }>(
    `WITH rule AS (
       INSERT INTO ledger.rules (tenant_id, card_id, status, created_at, updated_at) VALUES ($1, $2, $3, $5, $5) RETURNING id
     ), version AS (
       INSERT INTO ledger.rule_versions (rule_id, version, definition, created_at) SELECT id, 1, $4, $5 FROM rule
     )
     SELECT id FROM rule`,
    [r.tenantId, r.cardId, r.status, JSON.stringify(r.definition), r.at],
  );
  const rule = await findRule(db, r.tenantId, r.cardId, returnedRow(rows, 'insert rule').id);
  if (!rule) throw new Error('the rule just inserted is missing');
  return rule;
}

/** A rule of the card (and tenant); `lock` takes its row lock. */
export async function findRule(
  db: Queryable,
  tenantId: number,
  cardId: number,
  ruleId: number,
  lock = false,
): Promise<RuleRow | undefined> {
  const { rows } = await db.query<RuleRow>(
    `SELECT ${RULE} WHERE r.tenant_id = $1 AND r.card_id = $2 AND r.id = $3${lock ? ' FOR UPDATE OF r' : ''}`,
    [tenantId, cardId, ruleId],
  );
  return rows[0];
}

/** The card's rules of the given statuses (every status when absent), by id. */
export async function listRules(
  db: Queryable,
  tenantId: number,
  cardId: number,
  statuses?: RuleStatus[],
): Promise<RuleRow[]> {
  const { rows } = await db.query<RuleRow>(
    `SELECT ${RULE} WHERE r.tenant_id = $1 AND r.card_id = $2 AND ($3::text[] IS NULL OR r.status = ANY($3)) ORDER BY r.id`,
    [tenantId, cardId, statuses ?? null],
  );
  return rows;
}

export async function ruleVersions(db: Queryable, ruleId: number): Promise<{ version: number; created_at: Date }[]> {
  const { rows } = await db.query<{ version: number; created_at: Date }>(
    'SELECT version, created_at FROM ledger.rule_versions WHERE rule_id = $1 ORDER BY version',
    [ruleId],
  );
  return rows;
}

/** Write a new definition: as a new version, or over the current one (a draft's). */
export async function reviseRule(
  db: Queryable,
  rule: RuleRow,
  definition: RuleDefinition,
  newVersion: boolean,
  at: Date,
): Promise<void> {
  const json = JSON.stringify(definition);
  if (newVersion) {
    await db.query(
      `WITH version AS (INSERT INTO ledger.rule_versions (rule_id, version, definition, created_at) VALUES ($1, $2, $3, $4))
       UPDATE ledger.rules SET version = $2, updated_at = $4 WHERE id = $1`,
      [rule.id, rule.version + 1, json, at],
    );
  } else {
    await db.query(
      `WITH version AS (UPDATE ledger.rule_versions SET definition = $3, created_at = $4 WHERE rule_id = $1 AND version = $2)
       UPDATE ledger.rules SET updated_at = $4 WHERE id = $1`,
      [rule.id, rule.version, json, at],
    );
  }
}

export async function setRuleStatus(db: Queryable, ruleId: number, status: RuleStatus, at: Date): Promise<void> {
  await db.query('UPDATE ledger.rules SET status = $2, updated_at = $3 WHERE id = $1', [ruleId, status, at]);
}

/** A draft never took part in an earn: it leaves no trace. */
export async function deleteDraft(db: Queryable, ruleId: number): Promise<void> {
  await db.query(
    `WITH versions AS (DELETE FROM ledger.rule_versions WHERE rule_id = $1)
     DELETE FROM ledger.rules WHERE id = $1 AND status = 'draft'`,
    [ruleId],
  );
}

/** Lock the card's row (rule activations of one card serialize on it) and count its active rules. */
export async function lockCardCountActive(db: Queryable, cardId: number): Promise<number> {
  await db.query('SELECT 1 FROM ledger.cards WHERE id = $1 FOR UPDATE', [cardId]);
  const { rows } = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM ledger.rules WHERE card_id = $1 AND status = 'active'",
    [cardId],
  );
  return returnedRow(rows, 'active rules').n;
}

// ---- what rules gave (caps and budgets) ---------------------------------------------------------

/** What each rule gave the member in the named periods (read under the member's account lock). */
export async function memberUsage(
  db: Queryable,
  memberId: number,
  keys: { ruleId: number; periodKey: string }[],
): Promise<Map<string, number>> {
  if (keys.length === 0) return new Map();
  const { rows } = await db.query<{ rule_id: number; period_key: string; given: number }>(
    `SELECT u.rule_id, u.period_key, u.given FROM ledger.rule_member_usage u
       JOIN unnest($2::bigint[], $3::text[]) AS k(rule_id, period_key) USING (rule_id, period_key)
      WHERE u.member_id = $1`,
    [memberId, keys.map((k) => k.ruleId), keys.map((k) => k.periodKey)],
  );
  return new Map(rows.map((r) => [`${r.rule_id}:${r.period_key}`, Number(r.given)]));
}

/**
 * What these rules gave in all (their budgets), locked (in id order, so two earns never deadlock)
 * when `lock`; a quote reads without a lock.
 */
export async function ruleBudgets(db: Queryable, ruleIds: number[], lock: boolean): Promise<Map<number, number>> {
  if (ruleIds.length === 0) return new Map();
  const { rows } = await db.query<{ id: number; budget_used: number }>(
    `SELECT id, budget_used FROM ledger.rules WHERE id = ANY($1::bigint[]) ORDER BY id${lock ? ' FOR NO KEY UPDATE' : ''}`,
    [ruleIds],
  );
  return new Map(rows.map((r) => [Number(r.id), Number(r.budget_used)]));
}

/**
 * Add what rules gave: to the member's counters of capped rules (`periodKey` set) and to the
 * budget use of rules with a budget (`budget`). Rules with neither are not written, so an earn
 * locks no rule row it does not need.
 */
export async function addUsage(
  db: Queryable,
  memberId: number,
  given: { ruleId: number; periodKey: string | null; budget: boolean; amount: number }[],
): Promise<void> {
  const capped = given.filter((g) => g.periodKey !== null);
  const budgeted = given.filter((g) => g.budget);
  if (capped.length > 0)
    await db.query(
      `INSERT INTO ledger.rule_member_usage AS u (rule_id, member_id, period_key, given)
       SELECT rule_id, $1, period_key, amount FROM unnest($2::bigint[], $3::text[], $4::bigint[]) AS g(rule_id, period_key, amount)
       ON CONFLICT (rule_id, member_id, period_key) DO UPDATE SET given = u.given + EXCLUDED.given`,
      [memberId, capped.map((g) => g.ruleId), capped.map((g) => g.periodKey), capped.map((g) => g.amount)],
    );
  if (budgeted.length > 0)
    await db.query(
      `UPDATE ledger.rules r SET budget_used = r.budget_used + g.amount
         FROM unnest($1::bigint[], $2::bigint[]) AS g(rule_id, amount) WHERE r.id = g.rule_id`,
      [budgeted.map((g) => g.ruleId), budgeted.map((g) => g.amount)],
    );
}

/** The member's earns on the card so far (first purchase, every Nth purchase). */
export async function countEarns(db: Queryable, cardId: number, memberId: number, event: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM ledger.journal WHERE member_id = $1 AND card_id = $2 AND event = $3',
    [memberId, cardId, event],
  );
  return returnedRow(rows, 'count earns').n;
}

// ---- which rule versions produced a journal row --------------------------------------------------

export interface JournalRules {
  journalId: number;
  cardId: number;
  memberId: number;
  rules: { rule_id: number; version: number; amount: number; capped: boolean }[];
  allocation?: EarnAllocation;
  refundOf?: number;
  refund?: { lines: { sku: string; quantity: number; amount: number }[]; fixed: { rule_id: number; amount: number }[] };
}

export async function insertJournalRules(db: Queryable, j: JournalRules): Promise<void> {
  await db.query(
    `INSERT INTO ledger.journal_rules (journal_id, card_id, member_id, rules, allocation, refund_of, refund)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      j.journalId,
      j.cardId,
      j.memberId,
      JSON.stringify(j.rules),
      j.allocation ? JSON.stringify(j.allocation) : null,
      j.refundOf ?? null,
      j.refund ? JSON.stringify(j.refund) : null,
    ],
  );
}

/** An earn on the card by its reference, with its purchase amount (refunds of earns that rules shaped). */
export async function earnOf(
  db: Queryable,
  cardId: number,
  reference: string,
): Promise<{ id: number; member_id: number; amount: number; purchase_cents: number } | undefined> {
  const { rows } = await db.query<{ id: number; member_id: number; amount: number; purchase_cents: number }>(
    `SELECT id, member_id, amount, purchase_cents FROM ledger.journal
      WHERE card_id = $1 AND reference = $2 AND event IN ('cashback_earned', 'staff_added_points')`,
    [cardId, reference],
  );
  return rows[0];
}

/** The rules behind an earn, what its lines earned, and what earlier refunds by line of it took back. */
export async function earnRules(db: Queryable, journalId: number): Promise<EarnRules | undefined> {
  const { rows } = await db.query<{
    rules: JournalRules['rules'];
    allocation: EarnAllocation | null;
    refunds: NonNullable<JournalRules['refund']>[];
  }>(
    `SELECT e.rules, e.allocation,
            COALESCE((SELECT json_agg(r.refund ORDER BY r.journal_id) FROM ledger.journal_rules r
                       WHERE r.refund_of = e.journal_id AND r.refund IS NOT NULL), '[]') AS refunds
       FROM ledger.journal_rules e WHERE e.journal_id = $1`,
    [journalId],
  );
  const row = rows[0];
  return row?.allocation ? { rules: row.rules, allocation: row.allocation, refunds: row.refunds } : undefined;
}

export interface EarnRules {
  rules: JournalRules['rules'];
  allocation: EarnAllocation;
  refunds: NonNullable<JournalRules['refund']>[];
}

// ---- member events --------------------------------------------------------------------------------

export async function findMemberEvent(db: Queryable, cardId: number, reference: string): Promise<unknown> {
  const { rows } = await db.query<{ answer: unknown }>(
    'SELECT answer FROM ledger.member_events WHERE card_id = $1 AND reference = $2',
    [cardId, reference],
  );
  return rows[0]?.answer;
}

export async function insertMemberEvent(
  db: Queryable,
  e: {
    cardId: number;
    reference: string;
    tenantId: number;
    memberId: number;
    event: string;
    answer: unknown;
    at: Date;
  },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO ledger.member_events (card_id, reference, tenant_id, member_id, event, answer, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
    [e.cardId, e.reference, e.tenantId, e.memberId, e.event, JSON.stringify(e.answer), e.at],
  );
  return rowCount === 1;
}
