import { AppError } from '@loyalty/contracts';
import type { Queryable } from '@loyalty/runtime';
import type { RuledCard } from '../card-cache.ts';
import { fromCents } from '../domain/money.ts';
import { compileRule, type CompiledRule, type Evaluation, type RuleStatus } from '../domain/rules/index.ts';
import type { Card } from '../store/cards.ts';
import { listRules } from '../store/rules.ts';
import { appliedView } from './rule-earn.ts';

/** A quote's simulation switches. */
export interface Simulation {
  include_drafts?: boolean;
  rule_ids?: number[];
}

export interface SimulatedRule {
  rule: CompiledRule;
  status: RuleStatus;
}

/** An earn quote's evaluation, with the status of every rule it ran. */
export interface RuleQuote {
  evaluation: Evaluation;
  statuses: Map<number, RuleStatus>;
}

const activeRule = (rule: CompiledRule): SimulatedRule => ({ rule, status: 'active' });

/**
 * The purchase rules a quote evaluates: the card's active ones (from the card cache) and, when it
 * asks, its drafts and paused rules (`include_drafts`) or the rules it names (`rule_ids`, any
 * status; one the card does not have is rule_not_found).
 */
export async function simulatedRules(db: Queryable, card: RuledCard, d: Simulation): Promise<SimulatedRule[]> {
  const active = card.rules.filter((r) => r.kind !== 'event').map(activeRule);
  if (d.include_drafts !== true && d.rule_ids === undefined) return active;
  const rows = await listRules(db, card.tenant_id, card.id);
  const named = new Set(d.rule_ids ?? []);
  for (const id of named)
    if (!rows.some((r) => r.id === id)) throw new AppError('rule_not_found', `The card has no rule ${id}.`);
  const have = new Set(active.map((a) => a.rule.id));
  const extra = rows
    .filter((r) => !have.has(r.id) && r.definition.kind !== 'event')
    .filter((r) => named.has(r.id) || (d.include_drafts === true && (r.status === 'draft' || r.status === 'paused')))
    .map((r) => ({ rule: compileRule(r, r.definition, card.reward_system), status: r.status }));
  return [...active, ...extra];
}

/** A quote's rule fields, in the card's unit as the interface writes it (points, or currency units). */
export function ruleQuoteView(card: Card, q: RuleQuote) {
  const v = (x: number) => (card.reward_system === 'points' ? x : fromCents(x));
  return {
    base: v(q.evaluation.base),
    rules_applied: appliedView(card, q.evaluation.applied),
    trace: q.evaluation.trace.map((t) => ({
      rule_id: t.rule_id,
      version: t.version,
      name: t.name,
      kind: t.kind,
      combination: t.combination,
      priority: t.priority,
      status: q.statuses.get(t.rule_id) ?? 'active',
      matched: t.matched,
      reason: t.reason,
      computed: v(t.computed),
      gave: v(t.gave),
      capped: t.capped,
      cap: t.cap && { ...t.cap, limit: v(t.cap.limit), used: v(t.cap.used), remaining: v(t.cap.remaining) },
      budget: t.budget && { limit: v(t.budget.limit), used: v(t.budget.used), remaining: v(t.budget.remaining) },
    })),
  };
}
