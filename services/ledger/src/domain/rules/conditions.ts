import { localTime } from './local-time.ts';
import type { CompiledRule, EvaluationInput, PurchaseLine } from './types.ts';

/** The lines a rule counts (with its SKU/category condition) and their cents. */
export interface Matched {
  /** Positions in the purchase's lines (the one line of a purchase without line items: 0). */
  lines: number[];
  cents: number;
}

/** A rule's match: the lines it counts, or why it does not apply. */
export type MatchResult = { ok: true; matched: Matched } | { ok: false; reason: string };

const no = (reason: string): MatchResult => ({ ok: false, reason });

/** What the line conditions see of a purchase without line items. */
const NO_SKU = { sku: null, category: null } as const;

/** The lines of a purchase (one line of no SKU for a purchase without line items). */
export function linesOf(o: { cents: number; lines: PurchaseLine[] | null }): PurchaseLine[] {
  return o.lines ?? [{ sku: '', category: null, quantity: 1, cents: o.cents }];
}

/**
 * The match of a rule without SKU or category conditions: every line of the purchase. Made once per
 * purchase and shared by every such rule (the evaluator only reads it).
 */
const everyLineOf = new WeakMap<object, MatchResult>();
function everyLine(o: { cents: number; lines: PurchaseLine[] | null }): MatchResult {
  let m = everyLineOf.get(o);
  if (m === undefined) {
    const all = linesOf(o);
    m = { ok: true, matched: { lines: all.map((_, i) => i), cents: all.reduce((c, l) => c + l.cents, 0) } };
    everyLineOf.set(o, m);
  }
  return m;
}

/** Whether a line passes a rule's SKU and category lists (either list may name it). */
export function lineMatches(
  line: { sku: string | null; category: string | null },
  skus: string[] | null,
  categories: string[] | null,
): boolean {
  if (skus === null && categories === null) return true;
  return (
    (skus !== null && line.sku !== null && skus.includes(line.sku)) ||
    (categories !== null && line.category !== null && categories.includes(line.category))
  );
}

/** Active dates, weekdays and the time window, in the card's time zone. */
function timeReason(rule: CompiledRule, at: Date, timeZone: string): string | null {
  const w = rule.when;
  const t = at.getTime();
  if (w.from !== null && t < w.from) return 'not active yet (active_from)';
  if (w.until !== null && t >= w.until) return 'no longer active (active_until)';
  if (w.days === null && w.window === null) return null;
  const local = localTime(at, timeZone);
  if (w.days !== null && !w.days.includes(local.weekday)) return `not on ${local.weekday} (days_of_week)`;
  if (w.window !== null) {
    const { from, until } = w.window;
    const inside =
      from < until ? local.minute >= from && local.minute < until : local.minute >= from || local.minute < until;
    if (!inside) return 'outside the time of day window';
  }
  return null;
}

/** Whether `rule` applies to the input's occasion, and to which lines. */
export function match(rule: CompiledRule, input: EvaluationInput): MatchResult {
  const o = input.occasion;
  if (rule.kind === 'event') {
    if (o.kind !== 'event') return no('an event rule gives points when its member event is reported');
    if (o.name !== rule.event) return no(`waits for the event ${rule.event ?? ''}`);
  } else if (o.kind !== 'purchase') return no('applies to purchases');
  const when = timeReason(rule, input.at, input.timeZone);
  if (when !== null) return no(when);
  const w = rule.when;
  if (w.tiers !== null && (input.tier === null || !w.tiers.includes(input.tier)))
    return no(input.tier === null ? 'the member has no tier' : `tier ${input.tier} is not listed`);
  if (o.kind === 'event') return { ok: true, matched: { lines: [], cents: 0 } };
  if (w.minCents !== null && o.cents < w.minCents) return no('the purchase is below min_amount');
  if (w.tags !== null) {
    const missing = w.tags.find((t) => !o.tags.includes(t));
    if (missing !== undefined) return no(`the purchase is not tagged ${missing}`);
  }
  if (w.firstPurchase && o.purchaseNumber !== 1) return no("not the member's first purchase on the card");
  if (w.everyNth !== null && o.purchaseNumber % w.everyNth !== 0)
    return no(`purchase number ${o.purchaseNumber} is not a multiple of ${w.everyNth}`);
  if (w.skus === null && w.categories === null) return everyLine(o);
  const lines: number[] = [];
  let cents = 0;
  let i = 0;
  for (const line of linesOf(o)) {
    if (lineMatches(o.lines === null ? NO_SKU : line, w.skus, w.categories)) {
      lines.push(i);
      cents += line.cents;
    }
    i++;
  }
  if (lines.length === 0) return no('no line matches its SKUs or categories');
  return { ok: true, matched: { lines, cents } };
}
