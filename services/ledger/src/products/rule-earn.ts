import { AppError } from '@loyalty/contracts';
import type { Outbox, Queryable } from '@loyalty/runtime';
import { cashbackRule, pointsRatio } from '../card-catalogue.ts';
import type { RuledCard } from '../card-cache.ts';
import { cashbackFor, pointsFor } from '../domain/formulas.ts';
import { fromCents, toCents } from '../domain/money.ts';
import {
  evaluateRules,
  periodKey,
  type AppliedRule,
  type CompiledRule,
  type Evaluation,
  type PurchaseLine,
  type RuleUsage,
} from '../domain/rules/index.ts';
import type { AccountKey } from '../store/accounts.ts';
import type { Card } from '../store/cards.ts';
import { addUsage, countEarns, memberUsage, ruleBudgets } from '../store/rules.ts';

/** A purchase line as the API writes it. */
export interface LineItemInput {
  sku: string;
  category?: string;
  quantity: number;
  unit_price: number;
}

/** What rules read of a purchase: its cents, its lines (null: none given) and its tags. */
export interface PurchaseFacts {
  cents: number;
  lines: PurchaseLine[] | null;
  tags: string[];
}

/**
 * The purchase's facts; line items must add up to the purchase amount to the cent (422
 * line_items_mismatch, naming the difference). Sums in BigInt: a hostile quantity x price
 * cannot lose precision on the way to being refused.
 */
export function purchaseFacts(d: {
  purchase_amount: number;
  line_items?: LineItemInput[];
  tags?: string[];
}): PurchaseFacts {
  const cents = toCents(d.purchase_amount);
  const tags = d.tags ?? [];
  if (d.line_items === undefined) return { cents, lines: null, tags };
  const totals = d.line_items.map((l) => BigInt(toCents(l.unit_price)) * BigInt(l.quantity));
  const sum = totals.reduce((a, b) => a + b, 0n);
  if (sum !== BigInt(cents)) {
    const difference = fromCents(Number(sum - BigInt(cents)));
    const total = fromCents(Number(sum));
    throw new AppError(
      'line_items_mismatch',
      `The line items add up to ${total}, not purchase_amount ${d.purchase_amount} (difference ${difference}).`,
      { line_items_total: total, purchase_amount: d.purchase_amount, difference },
    );
  }
  const lines = d.line_items.map((l, i) => ({
    sku: l.sku,
    category: l.category ?? null,
    quantity: l.quantity,
    cents: Number(totals[i] ?? 0n),
  }));
  return { cents, lines, tags };
}

/**
 * The card's base formula on part of a purchase (what a multiplier multiplies). On a cashback
 * card the card's minimum purchase applies to the whole purchase and its per-purchase cap to the
 * base earn only.
 */
export function baseOf(card: Card, purchaseCents: number): (cents: number) => number {
  if (card.reward_system === 'points') {
    const ratio = pointsRatio(card);
    return (cents) => pointsFor(cents, ratio);
  }
  const rule = cashbackRule(card);
  if (purchaseCents < rule.minCents) return () => 0;
  return (cents) => cashbackFor(cents, { ...rule, minCents: 0, maxCents: null });
}

/** What a member has been given by each rule in its cap's current period, and each budget's use. */
export interface RuleUsageState {
  member: Map<string, number>;
  budgets: Map<number, number>;
}

/** What the evaluator asks of a rule: the member's use of its cap in the current period, and its budget's. */
export function usageOf(state: RuleUsageState, at: Date, timeZone: string): (r: CompiledRule) => RuleUsage {
  return (r) => ({
    member: r.cap === null ? 0 : (state.member.get(`${r.id}:${periodKey(r.cap.period, at, timeZone)}`) ?? 0),
    budget: state.budgets.get(r.id) ?? 0,
  });
}

/**
 * Read the rules' caps and budgets for the member. Inside an earn the member's account row is
 * already locked (the member's counters cannot move) and `lock` locks the budget rows too.
 */
export async function usageState(
  db: Queryable,
  rules: readonly CompiledRule[],
  memberId: number | undefined,
  at: Date,
  timeZone: string,
  lock: boolean,
): Promise<RuleUsageState> {
  const keys = rules.flatMap((r) =>
    r.cap === null ? [] : [{ ruleId: r.id, periodKey: periodKey(r.cap.period, at, timeZone) }],
  );
  const member = memberId === undefined ? new Map<string, number>() : await memberUsage(db, memberId, keys);
  const budgets = await ruleBudgets(
    db,
    rules.filter((r) => r.budget !== null).map((r) => r.id),
    lock,
  );
  return { member, budgets };
}

/** The member's number of this purchase (1: the first), read only when a rule asks for it. */
export async function purchaseNumber(
  db: Queryable,
  rules: readonly CompiledRule[],
  k: AccountKey | undefined,
  earnLabel: string,
): Promise<number> {
  if (!rules.some((r) => r.when.firstPurchase || r.when.everyNth !== null)) return 0;
  if (k === undefined) return 1;
  return (await countEarns(db, k.cardId, k.memberId, earnLabel)) + 1;
}

/** Evaluate the card's rules on a purchase with the usage read. */
export function evaluatePurchase(
  card: RuledCard,
  rules: readonly CompiledRule[],
  facts: PurchaseFacts,
  state: RuleUsageState,
  at: Date,
  number: number,
  tier: string | null = null,
): Evaluation {
  const earned = baseOf(card, facts.cents);
  const base =
    card.reward_system === 'points'
      ? pointsFor(facts.cents, pointsRatio(card))
      : cashbackFor(facts.cents, cashbackRule(card));
  return evaluateRules(rules, {
    unit: card.reward_system,
    at,
    timeZone: card.time_zone,
    tier,
    occasion: { kind: 'purchase', cents: facts.cents, lines: facts.lines, tags: facts.tags, purchaseNumber: number },
    base,
    baseOf: earned,
    usage: usageOf(state, at, card.time_zone),
  });
}

/** The rules beyond the base that gave something, as answers and events carry them. */
export function appliedView(card: Card, applied: AppliedRule[]) {
  return applied.map((a) => ({
    rule_id: a.rule_id,
    version: a.version,
    name: a.name,
    ...(card.reward_system === 'points' ? { points: a.amount } : { amount: fromCents(a.amount) }),
    capped: a.capped,
  }));
}

/** The same in an event's data (`amount`: points, or currency units). */
export function appliedEventView(card: Card, applied: AppliedRule[]) {
  return applied.map((a) => ({
    rule_id: a.rule_id,
    version: a.version,
    name: a.name,
    amount: card.reward_system === 'points' ? a.amount : fromCents(a.amount),
    capped: a.capped,
  }));
}

/** Whether an evaluation of these rules needs nothing of the member or the rule (no cap, budget, purchase count). */
export function stateless(rules: readonly CompiledRule[]): boolean {
  return rules.every((r) => r.cap === null && r.budget === null && !r.when.firstPurchase && r.when.everyNth === null);
}

/** What a journal row of an earn records of its rules: the versions that gave, and what each line earned. */
export function journalRulesOf(evaluation: Evaluation): { rules: unknown[]; allocation: unknown } {
  return {
    rules: evaluation.applied.map((a) => ({
      rule_id: a.rule_id,
      version: a.version,
      amount: a.amount,
      capped: a.capped,
    })),
    allocation: evaluation.allocation,
  };
}

/**
 * What an earn's rules did to their caps and budgets, written in its transaction (the rule
 * versions themselves went with the posting): the member's cap counters, the budgets, and
 * `rule_budget_exhausted` for a budget this earn spent to the end.
 */
export async function recordRuleEffects(
  db: Queryable,
  outbox: Outbox,
  e: {
    card: RuledCard;
    memberId: number;
    journalId: number;
    evaluation: Evaluation;
    rules: readonly CompiledRule[];
    at: Date;
  },
): Promise<void> {
  const { card, evaluation } = e;
  const byId = new Map(e.rules.map((r) => [r.id, r]));
  await addUsage(
    db,
    e.memberId,
    evaluation.applied.map((a) => ({
      ruleId: a.rule_id,
      periodKey: a.period_key,
      budget: (byId.get(a.rule_id)?.budget ?? null) !== null,
      amount: a.amount,
    })),
  );
  for (const a of evaluation.applied.filter((x) => x.exhausted_budget)) {
    const budget = byId.get(a.rule_id)?.budget ?? 0;
    await outbox.record(db, {
      type: 'rule_budget_exhausted',
      tenantId: card.tenant_id,
      occurredAt: e.at,
      data: {
        rule_id: a.rule_id,
        card_id: card.id,
        version: a.version,
        name: a.name,
        budget: card.reward_system === 'points' ? budget : fromCents(budget),
        member_id: e.memberId,
        transaction_id: e.journalId,
      },
    });
  }
}
