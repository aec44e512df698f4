import type { Decimal } from '../money.ts';
import type { Period, Weekday } from './local-time.ts';

export const RULE_KINDS = ['multiplier', 'per_amount', 'fixed', 'event'] as const;
export type RuleKind = (typeof RULE_KINDS)[number];

export const COMBINATIONS = ['stack', 'best', 'exclusive'] as const;
export type Combination = (typeof COMBINATIONS)[number];

export const RULE_STATUSES = ['draft', 'active', 'paused', 'ended'] as const;
export type RuleStatus = (typeof RULE_STATUSES)[number];

/** A rule's conditions as the API writes them; all optional, combined with AND. */
export interface RuleConditions {
  /** ISO timestamps with an offset; from inclusive, until exclusive. */
  active_from?: string;
  active_until?: string;
  /** Local weekdays of the card's time zone (mon ... sun). */
  days_of_week?: string[];
  /** Local `HH:MM` window, `until` exclusive; a window whose until is before its from runs over midnight. */
  time_of_day?: { from: string; until: string };
  /** Smallest purchase amount (currency units). */
  min_amount?: number;
  /** Line level: only lines with one of these SKUs or categories count. */
  skus?: string[];
  categories?: string[];
  /** Purchase level: the purchase must carry every one of these tags. */
  tags?: string[];
  /** The member's tier must be one of these (tiers are not assigned yet: such a rule does not match). */
  tiers?: string[];
  first_purchase?: boolean;
  /** Only the member's Nth, 2Nth, ... purchase on the card. */
  every_nth?: number;
}

/** A rule as the merchant defines it (the API's shape, stored as one version). */
export interface RuleDefinition {
  name: string;
  kind: RuleKind;
  /** Higher runs first; ties by rule id. The base earn is rule zero and always comes first. */
  priority: number;
  combination: Combination;
  /** `best` rules compete within their group. */
  group: string;
  /** An `exclusive` rule that matches takes the place of the base earn of what it matches. */
  replaces_base: boolean;
  /** multiplier: x factor on the base earn (0 < factor <= 100). */
  factor?: number;
  /** per_amount on a points card: extra points per currency unit; fixed/event on a points card: points. */
  points?: number;
  /** per_amount on a cashback card: extra percentage of the matching amount. */
  percentage?: number;
  /** fixed/event on a cashback card: currency amount. */
  amount?: number;
  /** event: the member event's name (birthday, signup, profile_completed or any custom name). */
  event?: string;
  conditions: RuleConditions;
  /** At most this much (points or currency) per member per period. */
  cap: { limit: number; period: Period } | null;
  /** At most this much in all, over every member. */
  budget: number | null;
}

/** A rule as it arrives, before its kind, combination and cap period are known to be valid. */
export type RuleDraft = Omit<RuleDefinition, 'kind' | 'combination' | 'cap'> & {
  kind: string;
  combination: string;
  cap: { limit: number; period: string } | null;
};

/** The card's unit: integer points or cents. */
export type EarnUnit = 'points' | 'cashback';

/** A rule version ready to evaluate: exact numbers in the card's unit. */
export interface CompiledRule {
  id: number;
  version: number;
  name: string;
  kind: RuleKind;
  priority: number;
  combination: Combination;
  group: string;
  replacesBase: boolean;
  factor: Decimal | null;
  /** per_amount: points per currency unit, or a percentage (cashback). */
  rate: Decimal | null;
  /** fixed/event: points or cents. */
  fixed: number;
  event: string | null;
  when: CompiledConditions;
  cap: { limit: number; period: Period } | null;
  budget: number | null;
}

export interface CompiledConditions {
  from: number | null;
  until: number | null;
  days: Weekday[] | null;
  window: { from: number; until: number } | null;
  minCents: number | null;
  skus: string[] | null;
  categories: string[] | null;
  tags: string[] | null;
  tiers: string[] | null;
  firstPurchase: boolean;
  everyNth: number | null;
}

/** A purchase line as the evaluator sees it: its total in cents. */
export interface PurchaseLine {
  sku: string;
  category: string | null;
  quantity: number;
  cents: number;
}

/** What a rule is evaluated against: a purchase, or a member event reported for the card. */
export type Occasion =
  | {
      kind: 'purchase';
      cents: number;
      /** null: the purchase came without line items (it is one line of no SKU). */
      lines: PurchaseLine[] | null;
      tags: string[];
      /** The member's purchases on the card, this one included (1: the first). */
      purchaseNumber: number;
    }
  | { kind: 'event'; name: string };

export interface EvaluationInput {
  unit: EarnUnit;
  at: Date;
  timeZone: string;
  tier: string | null;
  occasion: Occasion;
  /** The base earn of the whole purchase (rule zero; 0 for an event). */
  base: number;
  /** The base earn of part of the purchase (its cents), for multipliers. */
  baseOf: (cents: number) => number;
  /** What the rule already gave: the member in the cap's current period, and everyone in all (budget). */
  usage: (rule: CompiledRule) => RuleUsage;
}

export interface RuleUsage {
  member: number;
  budget: number;
}

export interface CapState {
  period: Period;
  period_key: string;
  limit: number;
  used: number;
  remaining: number;
}

export interface BudgetState {
  limit: number;
  used: number;
  remaining: number;
}

/** One rule's line of the trace: matched or not and why, what it gave, its cap state before. */
export interface TraceEntry {
  rule_id: number;
  version: number;
  name: string;
  kind: RuleKind;
  combination: Combination;
  priority: number;
  matched: boolean;
  /** Why it did not match or gave nothing; null when it gave. */
  reason: string | null;
  /** What it would give before caps, and what it gave. */
  computed: number;
  gave: number;
  capped: boolean;
  cap: CapState | null;
  budget: BudgetState | null;
}

/** A rule that gave something. */
export interface AppliedRule {
  rule_id: number;
  version: number;
  name: string;
  amount: number;
  capped: boolean;
  /** The cap's period at the time of the earn (counter to add to). */
  period_key: string | null;
  /** The rule's budget ran out with this. */
  exhausted_budget: boolean;
}

/** What each line earned (base and line bonuses), and the purchase-level bonuses, for refunds by line. */
export interface EarnAllocation {
  lines: { sku: string | null; category: string | null; quantity: number; cents: number; earned: number }[];
  fixed: {
    rule_id: number;
    version: number;
    amount: number;
    min_cents: number | null;
    skus: string[] | null;
    categories: string[] | null;
  }[];
}

export interface Evaluation {
  /** The base earn after any exclusive rule replaced part of it. */
  base: number;
  total: number;
  applied: AppliedRule[];
  trace: TraceEntry[];
  allocation: EarnAllocation;
}
