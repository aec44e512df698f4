import { divideFloor, divideHalfUp, pow10, type Decimal } from '../money.ts';
import { linesOf, match, type Matched } from './conditions.ts';
import { periodKey } from './local-time.ts';
import type {
  AppliedRule,
  BudgetState,
  CapState,
  CompiledRule,
  EarnAllocation,
  Evaluation,
  EvaluationInput,
  TraceEntry,
} from './types.ts';

/**
 * The earning rules engine: a pure function of (rule versions, purchase or member event, the
 * member's usage of each rule's cap and budget, the time in the card's time zone).
 *
 * Combination, in this order:
 * 1. The card's base earn is rule zero and always counts (unless an exclusive rule replaces it).
 * 2. Rules run by priority, highest first (ties: lower rule id first).
 * 3. A `stack` rule adds what it gives. A `best` rule competes with the other `best` rules of its
 *    group: only the one that gives most (after caps) applies (ties: the earlier). An `exclusive`
 *    rule that matches applies and stops every rule after it; with `replaces_base` its amount
 *    takes the place of the base earn of the lines it matched.
 * 4. What a rule gives is cut to what its member cap (per period, in the card's time zone) and its
 *    budget have left; `capped` says so.
 *
 * Points round down; cashback rounds half-up to the cent.
 */
export function evaluateRules(rules: readonly CompiledRule[], input: EvaluationInput): Evaluation {
  // A card's rules usually come in this order already (by id, all of one priority): then no copy.
  const ordered = inOrder(rules) ? rules : [...rules].sort(runsBefore);
  const trace: TraceEntry[] = [];
  const given: { rule: CompiledRule; matched: Matched; entry: TraceEntry }[] = [];
  const best = new Map<string, { rule: CompiledRule; matched: Matched; entry: TraceEntry }>();
  let stopped: CompiledRule | undefined;
  for (const rule of ordered) {
    const entry = traceEntry(rule, input);
    trace.push(entry);
    if (stopped !== undefined) {
      entry.reason = `the exclusive rule ${stopped.id} applied before it`;
      continue;
    }
    const m = match(rule, input);
    if (!m.ok) {
      entry.reason = m.reason;
      continue;
    }
    entry.matched = true;
    entry.computed = computed(rule, m.matched, input);
    entry.gave = Math.min(entry.computed, entry.cap?.remaining ?? Infinity, entry.budget?.remaining ?? Infinity);
    entry.capped = entry.gave < entry.computed;
    if (entry.capped)
      entry.reason = entry.budget?.remaining === entry.gave ? 'its budget is spent' : 'its cap is reached';
    const candidate = { rule, matched: m.matched, entry };
    if (rule.combination === 'best') {
      const holder = best.get(rule.group);
      if (holder === undefined || entry.gave > holder.entry.gave) {
        if (holder) lose(holder.entry, rule.group);
        best.set(rule.group, candidate);
      } else lose(entry, rule.group);
      continue;
    }
    given.push(candidate);
    if (rule.combination === 'exclusive') stopped = rule;
  }
  for (const b of best.values()) given.push(b);
  return outcome(given, trace, input);
}

/** Priority, highest first; ties: the lower rule id first. */
const runsBefore = (a: CompiledRule, b: CompiledRule): number => b.priority - a.priority || a.id - b.id;

function inOrder(rules: readonly CompiledRule[]): boolean {
  let previous: CompiledRule | undefined;
  for (const rule of rules) {
    if (previous !== undefined && runsBefore(previous, rule) > 0) return false;
    previous = rule;
  }
  return true;
}

/** A best rule beaten in its group gives nothing. */
function lose(entry: TraceEntry, group: string): void {
  entry.gave = 0;
  entry.capped = false;
  entry.reason = `another rule of the group ${group} gives more`;
}

function traceEntry(rule: CompiledRule, input: EvaluationInput): TraceEntry {
  const usage = input.usage(rule);
  const cap: CapState | null = rule.cap && {
    period: rule.cap.period,
    period_key: periodKey(rule.cap.period, input.at, input.timeZone),
    limit: rule.cap.limit,
    used: usage.member,
    remaining: Math.max(0, rule.cap.limit - usage.member),
  };
  const budget: BudgetState | null =
    rule.budget === null
      ? null
      : { limit: rule.budget, used: usage.budget, remaining: Math.max(0, rule.budget - usage.budget) };
  return {
    rule_id: rule.id,
    version: rule.version,
    name: rule.name,
    kind: rule.kind,
    combination: rule.combination,
    priority: rule.priority,
    matched: false,
    reason: null,
    computed: 0,
    gave: 0,
    capped: false,
    cap,
    budget,
  };
}

/** x * d, rounded as the unit rounds (points down, cents half-up). */
function times(x: number, d: Decimal, unit: EvaluationInput['unit'], divisor = 1n): number {
  const num = BigInt(x) * d.units;
  const den = pow10(d.scale) * divisor;
  return Number(unit === 'points' ? divideFloor(num, den) : divideHalfUp(num, den));
}

/** What a matching rule gives before its caps. */
function computed(rule: CompiledRule, m: Matched, input: EvaluationInput): number {
  switch (rule.kind) {
    case 'multiplier': {
      const base = input.baseOf(m.cents);
      if (rule.factor === null) return 0;
      const whole = times(base, rule.factor, input.unit);
      return rule.combination === 'exclusive' && rule.replacesBase ? whole : Math.max(0, whole - base);
    }
    case 'per_amount':
      // Points per currency unit (cents / 100), or a percentage of the cents (cents / 100 too).
      return rule.rate === null ? 0 : times(m.cents, rule.rate, input.unit, 100n);
    case 'fixed':
    case 'event':
      return rule.fixed;
  }
}

/**
 * Largest-remainder split of `amount` over `weights` (sum exactly `amount`; ties to the earlier).
 * All zero weights: evenly.
 */
export function spread(amount: number, weights: readonly number[]): number[] {
  if (weights.length === 0) return [];
  const total = weights.reduce((a, b) => a + b, 0);
  // Plain numbers while every product is exact (the usual case); BigInt beyond.
  if (total > 0 && amount * total <= Number.MAX_SAFE_INTEGER) return spreadExact(amount, weights, total);
  const w = weights.every((x) => x === 0) ? weights.map(() => 1n) : weights.map((x) => BigInt(x));
  const sum = w.reduce((a, b) => a + b, 0n);
  const whole = BigInt(amount);
  const shares = w.map((x) => (whole * x) / sum);
  const rests = w.map((x, i) => ({ i, r: (whole * x) % sum }));
  let left = whole - shares.reduce((a, b) => a + b, 0n);
  rests.sort((a, b) => (b.r > a.r ? 1 : b.r < a.r ? -1 : a.i - b.i));
  for (const { i } of rests) {
    if (left <= 0n) break;
    shares[i] = (shares[i] ?? 0n) + 1n;
    left--;
  }
  return shares.map(Number);
}

/** spread() in plain numbers: `amount * total` is below 2^53, so every product and remainder is exact. */
function spreadExact(amount: number, weights: readonly number[], total: number): number[] {
  const shares: number[] = [];
  let left = amount;
  for (const x of weights) {
    const share = Math.floor((amount * x) / total);
    shares.push(share);
    left -= share;
  }
  if (left === 0) return shares;
  // The largest remainders first (ties to the earlier). Up to 32 weights (a purchase's lines,
  // usually) they are picked one by one with a bit per weight taken: no array and no sort per
  // call, which a rule's share of every earn made one of the ledger's largest allocations.
  if (weights.length <= 32) {
    let taken = 0;
    for (; left > 0; left--) {
      let pick = -1;
      let best = -1;
      for (let i = 0; i < weights.length; i++) {
        if ((taken & (1 << i)) !== 0) continue;
        const rest = (amount * (weights[i] ?? 0)) % total;
        if (rest > best) {
          best = rest;
          pick = i;
        }
      }
      taken |= 1 << pick;
      shares[pick] = (shares[pick] ?? 0) + 1;
    }
    return shares;
  }
  const rests = weights.map((x) => (amount * x) % total);
  const order = weights.map((_, i) => i).sort((a, b) => (rests[b] ?? 0) - (rests[a] ?? 0) || a - b);
  for (const i of order) {
    if (left <= 0) break;
    shares[i] = (shares[i] ?? 0) + 1;
    left--;
  }
  return shares;
}

/** The totals, the base after replacements, the applied rules and what each line earned. */
function outcome(
  given: { rule: CompiledRule; matched: Matched; entry: TraceEntry }[],
  trace: TraceEntry[],
  input: EvaluationInput,
): Evaluation {
  const o = input.occasion;
  const lines = o.kind === 'purchase' ? linesOf(o) : [];
  const baseShares = spread(
    input.base,
    lines.map((l) => l.cents),
  );
  const earned = [...baseShares];
  const fixed: EarnAllocation['fixed'] = [];
  let base = input.base;
  for (const { rule, matched, entry } of given) {
    if (rule.combination === 'exclusive' && rule.replacesBase && o.kind === 'purchase')
      for (const i of matched.lines) {
        base -= baseShares[i] ?? 0;
        earned[i] = (earned[i] ?? 0) - (baseShares[i] ?? 0);
      }
    if (entry.gave <= 0) continue;
    if (rule.kind === 'fixed') fixed.push(fixedOf(rule, entry.gave));
    else if (rule.kind !== 'event') {
      const shares = spread(
        entry.gave,
        matched.lines.map((i) => lines[i]?.cents ?? 0),
      );
      let j = 0;
      for (const i of matched.lines) earned[i] = (earned[i] ?? 0) + (shares[j++] ?? 0);
    }
  }
  // What gave is in `given` (a beaten best rule or one after an exclusive gave nothing): the
  // trace is in the order the rules ran, which is the order of the applied rules.
  const applied = trace.filter((t) => t.gave > 0).map(appliedOf);
  const total = base + applied.reduce((a, r) => a + r.amount, 0);
  const allocation: EarnAllocation = {
    lines: lines.map((l, i) => ({
      sku: o.kind === 'purchase' && o.lines !== null ? l.sku : null,
      category: l.category,
      quantity: l.quantity,
      cents: l.cents,
      earned: earned[i] ?? 0,
    })),
    fixed,
  };
  return { base, total, applied, trace, allocation };
}

function appliedOf(entry: TraceEntry): AppliedRule {
  return {
    rule_id: entry.rule_id,
    version: entry.version,
    name: entry.name,
    amount: entry.gave,
    capped: entry.capped,
    period_key: entry.cap?.period_key ?? null,
    exhausted_budget: entry.budget !== null && entry.budget.remaining === entry.gave,
  };
}

function fixedOf(rule: CompiledRule, amount: number): EarnAllocation['fixed'][number] {
  return {
    rule_id: rule.id,
    version: rule.version,
    amount,
    min_cents: rule.when.minCents,
    skus: rule.when.skus,
    categories: rule.when.categories,
  };
}
