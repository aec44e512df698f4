import { readIsoTime } from '@loyalty/contracts';
import { decimal, toCents } from '../money.ts';
import { minuteOfDay, PERIODS, WEEKDAYS } from './local-time.ts';
import {
  COMBINATIONS,
  RULE_KINDS,
  type CompiledConditions,
  type CompiledRule,
  type EarnUnit,
  type RuleConditions,
  type RuleDefinition,
  type RuleDraft,
} from './types.ts';

/** A field of a rule that cannot be, with why (the 422 answer names them all). */
export interface RuleProblem {
  field: string;
  message: string;
}

/** Bounds of a cap, a budget or a minimum: a balance's maximum in points, the largest purchase in currency. */
const MAX_POINTS = 1_000_000_000_000_000;
const MAX_AMOUNT = 1_000_000_000;
/** The largest `every_nth`: a member's millionth purchase on a card. */
const MAX_EVERY_NTH = 1_000_000;

const has = <T extends string>(list: readonly T[], v: unknown): v is T => list.some((x) => x === v);
const HHMM = /^([01]\d|2[0-3]):[0-5]\d$/;
const decimals = (v: number, n: number) => Number.isFinite(v) && Math.abs(v * 10 ** n - Math.round(v * 10 ** n)) < 1e-6;

/** Positive, at most `max`, with at most `n` decimals. */
function checkNumber(out: RuleProblem[], field: string, v: number | undefined, max: number, n: number): void {
  if (v === undefined) out.push({ field, message: 'is required for this kind of rule' });
  else if (!(v > 0)) out.push({ field, message: 'must be greater than 0' });
  else if (v > max) out.push({ field, message: `must be at most ${max}` });
  else if (!decimals(v, n)) out.push({ field, message: `may have at most ${n} decimals` });
}

/** What a rule of `kind` gives on a card of `unit`, and which field says it. */
function checkValue(out: RuleProblem[], d: RuleDraft, unit: EarnUnit): void {
  if (d.kind === 'multiplier') checkNumber(out, 'factor', d.factor, 100, 4);
  else if (d.kind === 'per_amount') {
    if (unit === 'points') checkNumber(out, 'points', d.points, 1_000_000, 4);
    else checkNumber(out, 'percentage', d.percentage, 100, 4);
  } else if (unit === 'points') checkNumber(out, 'points', d.points, 1_000_000_000, 0);
  else checkNumber(out, 'amount', d.amount, 1_000_000, 2);
  if (d.kind === 'event' && (d.event === undefined || d.event.trim() === ''))
    out.push({ field: 'event', message: 'names the member event (birthday, signup, profile_completed or your own)' });
  const others = { factor: d.factor, points: d.points, percentage: d.percentage, amount: d.amount };
  const wanted =
    d.kind === 'multiplier'
      ? 'factor'
      : d.kind === 'per_amount'
        ? unit === 'points'
          ? 'points'
          : 'percentage'
        : unit === 'points'
          ? 'points'
          : 'amount';
  for (const [field, v] of Object.entries(others))
    if (v !== undefined && field !== wanted)
      out.push({ field, message: `does not apply to a ${d.kind} rule on a ${unit} card (use ${wanted})` });
}

const PURCHASE_ONLY = ['min_amount', 'skus', 'categories', 'tags', 'first_purchase', 'every_nth'] as const;

function checkLists(out: RuleProblem[], c: RuleConditions): void {
  for (const field of ['skus', 'categories', 'tags', 'tiers'] as const) {
    const list = c[field];
    if (list !== undefined && list.length === 0)
      out.push({ field: `conditions.${field}`, message: 'is empty, so the rule could never match' });
  }
  if (c.days_of_week !== undefined) {
    if (c.days_of_week.length === 0)
      out.push({ field: 'conditions.days_of_week', message: 'is empty, so the rule could never match' });
    c.days_of_week.forEach((d, i) => {
      if (!has(WEEKDAYS, d))
        out.push({ field: `conditions.days_of_week.${i}`, message: `must be one of ${WEEKDAYS.join(', ')}` });
    });
  }
}

function checkTimes(out: RuleProblem[], c: RuleConditions): void {
  const instant = (field: 'active_from' | 'active_until'): number | undefined => {
    const v = c[field];
    if (v === undefined) return undefined;
    const read = readIsoTime(v);
    if ('at' in read) return read.at.getTime();
    out.push({ field: `conditions.${field}`, message: read.problem });
    return Number.NaN;
  };
  const from = instant('active_from');
  const until = instant('active_until');
  if (from !== undefined && until !== undefined && until <= from)
    out.push({ field: 'conditions.active_until', message: 'must be after active_from' });
  const w = c.time_of_day;
  if (w !== undefined) {
    if (!HHMM.test(w.from))
      out.push({ field: 'conditions.time_of_day.from', message: 'must be HH:MM (00:00 to 23:59)' });
    if (!HHMM.test(w.until))
      out.push({ field: 'conditions.time_of_day.until', message: 'must be HH:MM (00:00 to 23:59)' });
    if (w.from === w.until)
      out.push({ field: 'conditions.time_of_day.until', message: 'equals from, so the window is empty' });
  }
}

function checkConditions(out: RuleProblem[], d: RuleDraft): void {
  const c = d.conditions;
  checkLists(out, c);
  checkTimes(out, c);
  if (c.min_amount !== undefined && !(c.min_amount >= 0 && c.min_amount <= MAX_AMOUNT && decimals(c.min_amount, 2)))
    out.push({
      field: 'conditions.min_amount',
      message: `must be an amount from 0 to ${MAX_AMOUNT} with at most 2 decimals`,
    });
  // Bounded as a priority is: 1e300 is a whole number too, and no member makes that many purchases.
  if (c.every_nth !== undefined && !(Number.isInteger(c.every_nth) && c.every_nth >= 1 && c.every_nth <= MAX_EVERY_NTH))
    out.push({ field: 'conditions.every_nth', message: `must be a whole number from 1 to ${MAX_EVERY_NTH}` });
  else if (c.first_purchase === true && c.every_nth !== undefined && c.every_nth > 1)
    out.push({
      field: 'conditions.every_nth',
      message: 'with first_purchase the rule could never match (the first purchase is never an Nth one)',
    });
  if (d.kind === 'event')
    for (const field of PURCHASE_ONLY)
      if (c[field] !== undefined)
        out.push({ field: `conditions.${field}`, message: 'applies to purchases; an event rule has no purchase' });
}

function checkLimits(out: RuleProblem[], d: RuleDraft, unit: EarnUnit): void {
  const places = unit === 'points' ? 0 : 2;
  const max = unit === 'points' ? MAX_POINTS : MAX_AMOUNT;
  const fits = (v: number) => v > 0 && v <= max && decimals(v, places);
  const rule = `must be greater than 0 and at most ${max}${places === 0 ? ', in whole points' : ', with at most 2 decimals'}`;
  if (d.cap !== null) {
    if (!has(PERIODS, d.cap.period)) out.push({ field: 'cap.period', message: `must be one of ${PERIODS.join(', ')}` });
    if (!fits(d.cap.limit)) out.push({ field: 'cap.limit', message: rule });
  }
  if (d.budget !== null && !fits(d.budget)) out.push({ field: 'budget', message: rule });
}

/** Everything wrong with a rule for a card of `unit` (empty: it is valid). */
export function ruleProblems(d: RuleDraft, unit: EarnUnit): RuleProblem[] {
  const out: RuleProblem[] = [];
  if (!has(RULE_KINDS, d.kind)) out.push({ field: 'kind', message: `must be one of ${RULE_KINDS.join(', ')}` });
  if (!has(COMBINATIONS, d.combination))
    out.push({ field: 'combination', message: `must be one of ${COMBINATIONS.join(', ')}` });
  if (!Number.isInteger(d.priority) || Math.abs(d.priority) > 1_000_000)
    out.push({ field: 'priority', message: 'must be a whole number between -1000000 and 1000000' });
  if (d.replaces_base && d.combination !== 'exclusive')
    out.push({ field: 'replaces_base', message: 'only an exclusive rule can replace the base earn' });
  if (out.length > 0) return out; // the rest depends on the kind
  checkValue(out, d, unit);
  checkConditions(out, d);
  checkLimits(out, d, unit);
  return out;
}

/** The rule as a definition when it is valid for a card of `unit`, else its problems. */
export function checkedRule(d: RuleDraft, unit: EarnUnit): RuleDefinition | { problems: RuleProblem[] } {
  const problems = ruleProblems(d, unit);
  const kind = RULE_KINDS.find((k) => k === d.kind);
  const combination = COMBINATIONS.find((c) => c === d.combination);
  const period = d.cap === null ? undefined : PERIODS.find((p) => p === d.cap?.period);
  if (problems.length > 0 || kind === undefined || combination === undefined) return { problems };
  const cap = d.cap === null || period === undefined ? null : { limit: d.cap.limit, period };
  return { ...d, kind, combination, cap };
}

function compileConditions(c: RuleConditions): CompiledConditions {
  return {
    from: c.active_from === undefined ? null : Date.parse(c.active_from),
    until: c.active_until === undefined ? null : Date.parse(c.active_until),
    days: c.days_of_week === undefined ? null : WEEKDAYS.filter((w) => c.days_of_week?.includes(w)),
    window: c.time_of_day ? { from: minuteOfDay(c.time_of_day.from), until: minuteOfDay(c.time_of_day.until) } : null,
    minCents: c.min_amount === undefined ? null : toCents(c.min_amount),
    skus: c.skus ?? null,
    categories: c.categories ?? null,
    tags: c.tags ?? null,
    tiers: c.tiers ?? null,
    firstPurchase: c.first_purchase === true,
    everyNth: c.every_nth ?? null,
  };
}

/** A valid rule version in exact numbers of the card's unit (points, or cents). */
export function compileRule(ids: { id: number; version: number }, d: RuleDefinition, unit: EarnUnit): CompiledRule {
  const inUnit = (v: number) => (unit === 'points' ? Math.trunc(v) : toCents(v));
  const given = unit === 'points' ? d.points : d.amount;
  return {
    id: ids.id,
    version: ids.version,
    name: d.name,
    kind: d.kind,
    priority: d.priority,
    combination: d.combination,
    group: d.group,
    replacesBase: d.replaces_base,
    factor: d.factor === undefined ? null : decimal(d.factor, 4),
    rate: d.kind !== 'per_amount' ? null : decimal((unit === 'points' ? d.points : d.percentage) ?? 0, 4),
    fixed: d.kind === 'fixed' || d.kind === 'event' ? inUnit(given ?? 0) : 0,
    event: d.kind === 'event' ? (d.event ?? '').trim() : null,
    when: compileConditions(d.conditions),
    cap: d.cap && { limit: inUnit(d.cap.limit), period: d.cap.period },
    budget: d.budget === null ? null : inUnit(d.budget),
  };
}
