import * as z from 'zod';
import { Id, IdParam, Money, Text, Timestamp } from '../common.ts';
import { memberFields, memberRequired, memberRule, needsMember, Reference } from './member-ref.ts';
import { defineOperations } from './types.ts';

/**
 * Earning rules of a card (multipliers, per-amount and fixed bonuses, member events), the line
 * items and tags of purchases they read, and their trace. The ledger owns rules (card
 * configuration; caps are decided inside the posting transaction). Rule fields whose meaning
 * depends on the card (kind, combination, values, conditions) are checked by the ledger and
 * answered 422 `invalid_rule` naming each field, so the structure here stays loose on purpose.
 */

/** A purchase line: its total is quantity x unit_price. */
export const LineItem = z
  .object({
    sku: Text.trim().min(1).max(100),
    name: Text.trim().max(200).optional(),
    category: Text.trim().min(1).max(100).optional(),
    quantity: z.number().int().min(1).max(1_000_000),
    unit_price: Money.describe('currency units, at most two decimals'),
  })
  .meta({ id: 'LineItem' });

/** Up to 500 lines whose total must equal purchase_amount to the cent (else 422 line_items_mismatch). */
export const LineItems = z
  .array(LineItem)
  .min(1)
  .max(500)
  .describe('the purchase lines; their total must equal purchase_amount to the cent (422 line_items_mismatch)');

/** Up to 20 labels of a purchase (`online`, `store:12`) that rules may ask for. */
export const Tags = z
  .array(Text.trim().min(1).max(64))
  .max(20)
  .describe('labels of the purchase (e.g. online, store:12) that rules can require');

/** A refunded line: which SKU of the purchase and how many. */
export const RefundLineItem = z
  .object({ sku: Text.trim().min(1).max(100), quantity: z.number().int().min(1).max(1_000_000) })
  .meta({ id: 'RefundLineItem' });
export const RefundLineItems = z
  .array(RefundLineItem)
  .min(1)
  .max(500)
  .describe(
    'refund these lines of the purchase named by reference: takes back what they earned, bonuses included, and a fixed bonus the refund breaks',
  );

/** The fields an earn (and its quote) accepts beyond the interface's. */
export const earnRuleFields = { line_items: LineItems.optional(), tags: Tags.optional() };

/** The simulation switches of a quote. */
export const simulationFields = {
  include_drafts: z
    .boolean()
    .optional()
    .describe(
      'also evaluate draft (and paused) rules of the card; needs the programme_manage scope (else 403 insufficient_scope)',
    ),
  rule_ids: z
    .array(Id)
    .min(1)
    .max(100)
    .optional()
    .describe(
      'also evaluate these rules of the card, whatever their status; needs the programme_manage scope (else 403 insufficient_scope)',
    ),
};

/** A rule that gave something in an earn (only rules beyond the base earn). */
export const RuleApplied = z
  .object({
    rule_id: Id,
    version: z.number().int(),
    name: z.string(),
    points: z.number().int().optional().describe('points cards'),
    amount: z.number().optional().describe('cashback cards, currency units'),
    capped: z.boolean().describe('its cap or budget cut it'),
  })
  .meta({ id: 'RuleApplied' });

export const RuleTraceEntry = z
  .object({
    rule_id: Id,
    version: z.number().int(),
    name: z.string(),
    kind: z.string(),
    combination: z.string(),
    priority: z.number().int(),
    status: z.string(),
    matched: z.boolean(),
    reason: z
      .string()
      .nullable()
      .describe('why it did not match or gave nothing (or was cut); null when it gave in full'),
    computed: z.number().describe('what it would give before caps (points, or currency units)'),
    gave: z.number().describe('what it gives (points, or currency units)'),
    capped: z.boolean(),
    cap: z
      .object({
        period: z.string(),
        period_key: z.string(),
        limit: z.number(),
        used: z.number(),
        remaining: z.number(),
      })
      .nullable(),
    budget: z.object({ limit: z.number(), used: z.number(), remaining: z.number() }).nullable(),
  })
  .meta({ id: 'RuleTraceEntry' });

/** What a quote adds when the card has rules to evaluate. */
export const ruleQuoteFields = {
  base: z.number().optional().describe('earn quotes on cards with rules: the base earn (rule zero)'),
  rules_applied: z.array(RuleApplied).optional().describe('earn: the rules beyond the base that would give'),
  trace: z
    .array(RuleTraceEntry)
    .optional()
    .describe('earn quotes on cards with rules: every rule evaluated, in the order they ran'),
};

const Conditions = z
  .object({
    active_from: Text.optional().describe('ISO timestamp with offset; inclusive'),
    active_until: Text.optional().describe('ISO timestamp with offset; exclusive; after active_from'),
    days_of_week: z.array(Text).max(7).optional().describe('mon, tue, wed, thu, fri, sat, sun (card time zone)'),
    time_of_day: z
      .object({ from: Text, until: Text })
      .optional()
      .describe('HH:MM to HH:MM in the card time zone, until exclusive; until before from runs over midnight'),
    min_amount: z.number().optional().describe('smallest purchase amount'),
    skus: z.array(Text.trim().min(1).max(100)).max(500).optional().describe('line level'),
    categories: z.array(Text.trim().min(1).max(100)).max(500).optional().describe('line level'),
    tags: z.array(Text.trim().min(1).max(64)).max(20).optional().describe('every one required on the purchase'),
    tiers: z.array(Text.trim().min(1).max(100)).max(50).optional().describe("the member's tier must be listed"),
    first_purchase: z.boolean().optional(),
    every_nth: z.number().optional().describe("the member's Nth, 2Nth... purchase on the card (1 to 1000000)"),
  })
  // A misspelt condition refused, not dropped: dropped, it would widen the campaign without a word.
  .strict()
  .meta({ id: 'RuleConditions' });

const Cap = z
  .object({
    limit: z.number().describe('points, or currency units on a cashback card'),
    period: Text.describe('day, week, month, year or lifetime (card time zone)'),
  })
  .strict()
  .meta({ id: 'RuleCap' });

const ruleFields = {
  name: Text.trim().min(1).max(200),
  kind: Text.max(40).describe('multiplier, per_amount, fixed or event'),
  priority: z.number().describe('higher runs first (whole number); the base earn always comes first'),
  combination: Text.max(40).describe('stack (adds), best (best of its group) or exclusive (stops lower rules)'),
  group: Text.trim().min(1).max(100).describe('the group a best rule competes in'),
  replaces_base: z.boolean().describe('an exclusive rule that takes the place of the base earn of what it matches'),
  factor: z.number().optional().describe('multiplier: 0 < factor <= 100'),
  points: z.number().optional().describe('points cards: per_amount points per currency unit; fixed/event points'),
  percentage: z.number().optional().describe('cashback cards, per_amount: extra percentage'),
  amount: z.number().optional().describe('cashback cards, fixed/event: currency amount'),
  event: Text.trim().max(100).optional().describe('event rules: birthday, signup, profile_completed or your own name'),
  conditions: Conditions,
  cap: Cap.nullable().describe('at most this much per member per period; null: no cap'),
  budget: z.number().nullable().describe('at most this much in all, over every member; null: none'),
};

export const RuleInput = z
  .object({
    ...ruleFields,
    priority: ruleFields.priority.default(0),
    combination: ruleFields.combination.default('stack'),
    group: ruleFields.group.default('default'),
    replaces_base: ruleFields.replaces_base.default(false),
    conditions: Conditions.default({}),
    cap: ruleFields.cap.default(null),
    budget: ruleFields.budget.default(null),
    status: z.enum(['draft', 'active']).default('draft').describe('active: activate at once'),
  })
  .meta({ id: 'RuleInput' });

export const RulePatch = z
  .object({
    name: ruleFields.name.optional(),
    kind: ruleFields.kind.optional(),
    priority: ruleFields.priority.optional(),
    combination: ruleFields.combination.optional(),
    group: ruleFields.group.optional(),
    replaces_base: ruleFields.replaces_base.optional(),
    factor: z.number().nullable().optional(),
    points: z.number().nullable().optional(),
    percentage: z.number().nullable().optional(),
    amount: z.number().nullable().optional(),
    event: Text.trim().max(100).nullable().optional(),
    conditions: Conditions.optional().describe('replaces the conditions as a whole'),
    cap: ruleFields.cap.optional(),
    budget: ruleFields.budget.optional(),
  })
  // A misspelt field refused, not dropped: dropped, the change the caller meant would not happen.
  .strict()
  .describe(
    'fields left out keep their value; null removes a value; editing an active or paused rule makes a new version',
  )
  .meta({ id: 'RulePatch' });

export const RuleRecord = z
  .object({
    id: Id,
    card_id: Id,
    status: z.enum(['draft', 'active', 'paused', 'ended']),
    version: z.number().int(),
    ...ruleFields,
    budget_used: z.number().describe('what it has given in all (points, or currency units)'),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Rule' });

const RulesParams = z.object({ card_id: IdParam });
const RuleParams = z.object({ card_id: IdParam, rule_id: IdParam });
const common = { service: 'ledger', scope: 'programme_manage', memberToken: false, tag: 'Earning rules' } as const;
const notFound = ['card_not_found', 'rule_not_found'] as const;

export const ruleOperations = defineOperations({
  'rules.list': {
    ...common,
    method: 'GET',
    path: '/api/v1/loyalty/cards/:card_id/rules',
    operation: 'rules.list',
    idempotent: false,
    summary: "A card's earning rules (every status but deleted drafts), in the order they run",
    params: RulesParams,
    response: z.object({ card_id: Id, time_zone: z.string(), rules: z.array(RuleRecord), total: z.number().int() }),
    errors: ['card_not_found'],
  },
  'rules.create': {
    ...common,
    method: 'POST',
    path: '/api/v1/loyalty/cards/:card_id/rules',
    operation: 'rules.create',
    idempotent: true,
    summary: 'Create an earning rule (a draft, or active at once with status: active)',
    params: RulesParams,
    body: RuleInput,
    response: z.object({ rule: RuleRecord }),
    errors: ['card_not_found', 'invalid_rule', 'active_rule_limit', 'idempotency_key_reused'],
  },
  'rules.get': {
    ...common,
    method: 'GET',
    path: '/api/v1/loyalty/cards/:card_id/rules/:rule_id',
    operation: 'rules.get',
    idempotent: false,
    summary: 'One rule with its versions',
    params: RuleParams,
    response: z.object({
      rule: RuleRecord,
      versions: z.array(z.object({ version: z.number().int(), created_at: Timestamp })),
    }),
    errors: [...notFound],
  },
  'rules.update': {
    ...common,
    method: 'PATCH',
    path: '/api/v1/loyalty/cards/:card_id/rules/:rule_id',
    operation: 'rules.update',
    idempotent: false,
    summary:
      'Change a rule: a draft is rewritten; an active or paused rule gets a new version (an ended one cannot change)',
    params: RuleParams,
    body: RulePatch,
    response: z.object({ rule: RuleRecord }),
    errors: [...notFound, 'invalid_rule', 'rule_state_conflict'],
  },
  'rules.delete': {
    ...common,
    method: 'DELETE',
    path: '/api/v1/loyalty/cards/:card_id/rules/:rule_id',
    operation: 'rules.delete',
    idempotent: false,
    summary: 'Delete a draft; end an active or paused rule (it stays, for the journal rows that name it)',
    params: RuleParams,
    response: z.object({ rule_id: Id, deleted: z.boolean(), status: z.enum(['deleted', 'ended']) }),
    errors: [...notFound],
  },
  'rules.activate': {
    ...common,
    method: 'POST',
    path: '/api/v1/loyalty/cards/:card_id/rules/:rule_id/activate',
    operation: 'rules.activate',
    idempotent: false,
    summary: 'Activate a draft or paused rule (at most 100 active rules per card)',
    params: RuleParams,
    response: z.object({ rule: RuleRecord }),
    errors: [...notFound, 'rule_state_conflict', 'active_rule_limit'],
  },
  'rules.pause': {
    ...common,
    method: 'POST',
    path: '/api/v1/loyalty/cards/:card_id/rules/:rule_id/pause',
    operation: 'rules.pause',
    idempotent: false,
    summary: 'Pause an active rule (activate it again later)',
    params: RuleParams,
    response: z.object({ rule: RuleRecord }),
    errors: [...notFound, 'rule_state_conflict'],
  },
  'points.events': {
    service: 'ledger',
    tag: 'Points',
    scope: 'points_write',
    memberToken: false,
    method: 'POST',
    path: '/api/v1/loyalty/points/events',
    operation: 'points.events',
    idempotent: false,
    summary:
      "Report a member event (birthday, signup, profile_completed or your own name): the card's active event rules for it give points. Idempotent by reference: the same reference answers the first answer",
    body: z
      .object({
        card_id: Id,
        ...memberFields,
        event: Text.trim().min(1).max(100),
        reference: Reference,
      })
      .refine(needsMember, memberRule)
      .meta({ anyOf: memberRequired }),
    response: z.object({
      card_id: Id,
      member_id: Id,
      event: z.string(),
      reference: z.string(),
      points_earned: z.number().int(),
      transaction_id: Id.nullable().describe('null: no rule gave anything'),
      new_balance: z.number().int(),
      rules_applied: z.array(RuleApplied),
      replayed: z.boolean().describe('true: the reference was reported before; this is its first answer'),
    }),
    errors: ['card_not_found', 'member_not_found', 'wrong_card_type', 'member_inactive', 'duplicate_reference'],
  },
});

// ---- the same in the operator API (tenant in the path) ----------------------------------------

const admin = {
  service: 'ledger',
  scope: null,
  memberToken: false,
  idempotent: false,
  tag: 'Earning rules (operator)',
} as const;
const AdminRulesParams = z.object({ tenant_id: IdParam, card_id: IdParam });
const AdminRuleParams = z.object({ tenant_id: IdParam, card_id: IdParam, rule_id: IdParam });
const base = '/admin/v1/tenants/:tenant_id/cards/:card_id/rules';

export const ruleAdminOperations = defineOperations({
  'admin.rules.list': {
    ...admin,
    method: 'GET',
    path: base,
    operation: 'admin.rules.list',
    summary: "A card's earning rules",
    params: AdminRulesParams,
    response: ruleOperations['rules.list'].response,
    errors: ['invalid_operator_token', 'card_not_found'],
  },
  'admin.rules.create': {
    ...admin,
    method: 'POST',
    path: base,
    operation: 'admin.rules.create',
    summary: 'Create an earning rule',
    params: AdminRulesParams,
    body: RuleInput,
    response: ruleOperations['rules.create'].response,
    errors: ['invalid_operator_token', 'card_not_found', 'invalid_rule', 'active_rule_limit'],
  },
  'admin.rules.get': {
    ...admin,
    method: 'GET',
    path: `${base}/:rule_id`,
    operation: 'admin.rules.get',
    summary: 'One rule with its versions',
    params: AdminRuleParams,
    response: ruleOperations['rules.get'].response,
    errors: ['invalid_operator_token', ...notFound],
  },
  'admin.rules.update': {
    ...admin,
    method: 'PATCH',
    path: `${base}/:rule_id`,
    operation: 'admin.rules.update',
    summary: 'Change a rule (a new version when it is active or paused)',
    params: AdminRuleParams,
    body: RulePatch,
    response: ruleOperations['rules.update'].response,
    errors: ['invalid_operator_token', ...notFound, 'invalid_rule', 'rule_state_conflict'],
  },
  'admin.rules.delete': {
    ...admin,
    method: 'DELETE',
    path: `${base}/:rule_id`,
    operation: 'admin.rules.delete',
    summary: 'Delete a draft; end an active or paused rule',
    params: AdminRuleParams,
    response: ruleOperations['rules.delete'].response,
    errors: ['invalid_operator_token', ...notFound],
  },
  'admin.rules.activate': {
    ...admin,
    method: 'POST',
    path: `${base}/:rule_id/activate`,
    operation: 'admin.rules.activate',
    summary: 'Activate a draft or paused rule',
    params: AdminRuleParams,
    response: ruleOperations['rules.activate'].response,
    errors: ['invalid_operator_token', ...notFound, 'rule_state_conflict', 'active_rule_limit'],
  },
  'admin.rules.pause': {
    ...admin,
    method: 'POST',
    path: `${base}/:rule_id/pause`,
    operation: 'admin.rules.pause',
    summary: 'Pause an active rule',
    params: AdminRuleParams,
    response: ruleOperations['rules.pause'].response,
    errors: ['invalid_operator_token', ...notFound, 'rule_state_conflict'],
  },
});
