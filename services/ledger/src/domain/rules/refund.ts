import { lineMatches } from './conditions.ts';
import type { EarnAllocation } from './types.ts';

/** A refunded line as a refund names it. */
export interface RefundLine {
  sku: string;
  quantity: number;
}

/** What earlier refunds of the purchase took back by line: quantities per SKU and the fixed bonuses. */
export interface RefundedBefore {
  quantities: Record<string, number>;
  fixed: number[];
}

export interface LineRefund {
  /** What to take back, in the unit. */
  amount: number;
  lines: { sku: string; quantity: number; amount: number }[];
  fixed: { rule_id: number; version: number; amount: number }[];
}

export interface LineRefundProblem {
  field: string;
  message: string;
}

interface SkuTotal {
  sku: string;
  category: string | null;
  quantity: number;
  cents: number;
  earned: number;
}

function bySku(allocation: EarnAllocation): Map<string, SkuTotal> {
  const out = new Map<string, SkuTotal>();
  for (const l of allocation.lines) {
    if (l.sku === null) continue;
    const t = out.get(l.sku) ?? { sku: l.sku, category: l.category, quantity: 0, cents: 0, earned: 0 };
    t.quantity += l.quantity;
    t.cents += l.cents;
    t.earned += l.earned;
    out.set(l.sku, t);
  }
  return out;
}

/** floor(x * n / d) exactly. */
const part = (x: number, n: number, d: number) => Number((BigInt(x) * BigInt(n)) / BigInt(d));

/**
 * What a refund of some lines of a purchase takes back: each line's share of what it earned (the
 * base and every line bonus: multipliers, per-amount), in proportion to the quantity, counted
 * cumulatively so that refunding every unit, in any number of refunds, takes back exactly what
 * the line earned; and each fixed bonus whose condition the purchase no longer meets (what is
 * left is below its minimum, no line it counted is left, or nothing is left at all). Pure; the ledger caps the result by
 * what the purchase earned minus earlier refunds and by the balance.
 */
export function refundByLines(
  allocation: EarnAllocation,
  before: RefundedBefore,
  request: readonly RefundLine[],
): LineRefund | { problems: LineRefundProblem[] } {
  const totals = bySku(allocation);
  const after: Record<string, number> = { ...before.quantities };
  const problems: LineRefundProblem[] = [];
  const lines: LineRefund['lines'] = [];
  request.forEach((r, i) => {
    const t = totals.get(r.sku);
    const done = after[r.sku] ?? 0;
    if (t === undefined) problems.push({ field: `line_items.${i}.sku`, message: `the purchase has no line ${r.sku}` });
    else if (done + r.quantity > t.quantity)
      problems.push({
        field: `line_items.${i}.quantity`,
        message: `only ${t.quantity - done} of ${r.sku} are left to refund`,
      });
    else {
      const amount = part(t.earned, done + r.quantity, t.quantity) - part(t.earned, done, t.quantity);
      lines.push({ sku: r.sku, quantity: r.quantity, amount });
      after[r.sku] = done + r.quantity;
    }
  });
  if (problems.length > 0) return { problems };
  const fixed = brokenFixed(allocation, totals, after, before.fixed);
  const amount = lines.reduce((a, l) => a + l.amount, 0) + fixed.reduce((a, f) => a + f.amount, 0);
  return { amount, lines, fixed };
}

/** The fixed bonuses not yet taken back whose condition the purchase, less its refunded lines, breaks. */
function brokenFixed(
  allocation: EarnAllocation,
  totals: Map<string, SkuTotal>,
  refunded: Record<string, number>,
  takenBefore: number[],
): LineRefund['fixed'] {
  const left = [...totals.values()].map((t) => {
    const gone = refunded[t.sku] ?? 0;
    return { ...t, quantity: t.quantity - gone, cents: t.cents - part(t.cents, gone, t.quantity) };
  });
  const unnamed = allocation.lines.filter((l) => l.sku === null).reduce((a, l) => a + l.cents, 0);
  const leftCents = unnamed + left.reduce((a, t) => a + t.cents, 0);
  return allocation.fixed
    .filter((f) => !takenBefore.includes(f.rule_id))
    .filter((f) => {
      if (leftCents === 0) return true; // nothing is left of the purchase
      if (f.min_cents !== null && leftCents < f.min_cents) return true;
      if (f.skus === null && f.categories === null) return false;
      return !left.some((t) => t.quantity > 0 && lineMatches(t, f.skus, f.categories));
    })
    .map((f) => ({ rule_id: f.rule_id, version: f.version, amount: f.amount }));
}
