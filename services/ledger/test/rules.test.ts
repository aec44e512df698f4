import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decimal } from '../src/domain/money.ts';
import { cashbackFor, pointsFor } from '../src/domain/formulas.ts';
import {
  compileRule,
  evaluateRules,
  localTime,
  periodKey,
  refundByLines,
  ruleProblems,
  spread,
  type CompiledRule,
  type EvaluationInput,
  type PurchaseLine,
  type RuleDefinition,
  type RuleUsage,
} from '../src/domain/rules/index.ts';

const RATIO = decimal(1, 6); // 1 point per currency unit

function def(over: Partial<RuleDefinition>): RuleDefinition {
  return {
    name: 'rule',
    kind: 'multiplier',
    priority: 0,
    combination: 'stack',
    group: 'default',
    replaces_base: false,
    conditions: {},
    cap: null,
    budget: null,
    ...over,
  };
}

let nextId = 1;
function rule(over: Partial<RuleDefinition>, unit: 'points' | 'cashback' = 'points'): CompiledRule {
  const d = def(over);
  expect(ruleProblems(d, unit)).toEqual([]);
  return compileRule({ id: nextId++, version: 1 }, d, unit);
}

const line = (sku: string, cents: number, quantity = 1, category: string | null = null): PurchaseLine => ({
  sku,
  category,
  quantity,
  cents,
});

function purchase(
  cents: number,
  opts: {
    lines?: PurchaseLine[];
    tags?: string[];
    at?: string;
    tz?: string;
    n?: number;
    usage?: (r: CompiledRule) => RuleUsage;
    tier?: string;
  } = {},
): EvaluationInput {
  return {
    unit: 'points',
    at: new Date(opts.at ?? '2026-06-03T12:00:00Z'), // a Wednesday
    timeZone: opts.tz ?? 'UTC',
    tier: opts.tier ?? null,
    occasion: {
      kind: 'purchase',
      cents,
      lines: opts.lines ?? null,
      tags: opts.tags ?? [],
      purchaseNumber: opts.n ?? 2,
    },
    base: pointsFor(cents, RATIO),
    baseOf: (c) => pointsFor(c, RATIO),
    usage: opts.usage ?? (() => ({ member: 0, budget: 0 })),
  };
}

describe('rule kinds', () => {
  it('a multiplier adds (factor - 1) x the base of what it matches', () => {
    const r = rule({ kind: 'multiplier', factor: 2, conditions: { categories: ['pastry'] } });
    const e = evaluateRules(
      [r],
      purchase(2550, { lines: [line('croissant', 1000, 2, 'pastry'), line('coffee', 1550)] }),
    );
    expect(e.base).toBe(25);
    expect(e.applied).toMatchObject([{ rule_id: r.id, amount: 10, capped: false }]);
    expect(e.total).toBe(35);
    expect(e.allocation.lines.map((l) => l.earned)).toEqual([10 + 10, 15]);
  });

  it('per_amount gives points per currency unit of the matching lines; fixed gives once', () => {
    const per = rule({ kind: 'per_amount', points: 0.5, conditions: { skus: ['tea'] } });
    const fixed = rule({ kind: 'fixed', points: 50, conditions: { min_amount: 20 } });
    const e = evaluateRules([per, fixed], purchase(3000, { lines: [line('tea', 1999), line('cake', 1001)] }));
    expect(e.applied.map((a) => a.amount)).toEqual([9, 50]);
    expect(e.total).toBe(30 + 9 + 50);
    expect(e.allocation.fixed).toMatchObject([{ rule_id: fixed.id, amount: 50, min_cents: 2000 }]);
  });

  it('cashback rules add a percentage or an amount, rounded half-up to the cent', () => {
    const pct = rule({ kind: 'per_amount', percentage: 2.5 }, 'cashback');
    const amt = rule({ kind: 'fixed', amount: 1.25 }, 'cashback');
    const base = { percentage: decimal(5, 4), minCents: 0, maxCents: null };
    const e = evaluateRules([pct, amt], {
      ...purchase(1010),
      unit: 'cashback',
      base: cashbackFor(1010, base),
      baseOf: (c) => cashbackFor(c, base),
    });
    expect(e.base).toBe(51); // 50.5 -> 51
    expect(e.applied.map((a) => a.amount)).toEqual([25, 125]); // 25.25 -> 25
  });

  it('an event rule only answers its own event', () => {
    const birthday = rule({ kind: 'event', event: 'birthday', points: 100 });
    expect(evaluateRules([birthday], purchase(1000)).total).toBe(10);
    const input = { ...purchase(0), base: 0, occasion: { kind: 'event' as const, name: 'birthday' } };
    expect(evaluateRules([birthday], input).total).toBe(100);
    const other = { ...input, occasion: { kind: 'event' as const, name: 'signup' } };
    expect(evaluateRules([birthday], other).trace[0]).toMatchObject({
      matched: false,
      reason: 'waits for the event birthday',
    });
  });
});

describe('conditions', () => {
  it('active from/until, weekday and time of day are read in the card time zone', () => {
    const r = rule({
      kind: 'fixed',
      points: 5,
      conditions: { days_of_week: ['sat'], time_of_day: { from: '22:00', until: '02:00' } },
    });
    // Friday 23:30 UTC: still Friday in UTC.
    const fri2330 = '2026-06-05T23:30:00Z';
    expect(evaluateRules([r], purchase(100, { at: fri2330 })).trace[0]?.reason).toBe('not on fri (days_of_week)');
    // It is Saturday 00:30 in Lisbon (UTC+1 in summer): inside the window that runs over midnight.
    expect(evaluateRules([r], purchase(100, { at: fri2330, tz: 'Europe/Lisbon' })).total).toBe(1 + 5);
    const window = rule({ kind: 'fixed', points: 5, conditions: { active_until: '2026-06-03T12:00:00Z' } });
    expect(evaluateRules([window], purchase(100)).trace[0]?.reason).toBe('no longer active (active_until)');
  });

  it('a weekday ends at local midnight, also on a DST change', () => {
    // Europe/Berlin leaves DST on Sunday 2026-10-25 at 03:00 local (01:00 UTC): the day is 25 hours.
    const sunday = rule({ kind: 'fixed', points: 7, conditions: { days_of_week: ['sun'] } });
    const at = (iso: string) => evaluateRules([sunday], purchase(100, { at: iso, tz: 'Europe/Berlin' })).total;
    expect(at('2026-10-24T21:59:59Z')).toBe(1); // Saturday 23:59:59 CEST
    expect(at('2026-10-24T22:00:00Z')).toBe(8); // Sunday 00:00 CEST
    expect(at('2026-10-25T22:59:59Z')).toBe(8); // Sunday 23:59:59 CET (25 hours later)
    expect(at('2026-10-25T23:00:00Z')).toBe(1); // Monday 00:00 CET
    expect(localTime(new Date('2026-10-25T01:30:00Z'), 'Europe/Berlin')).toMatchObject({ day: 25, minute: 150 });
  });

  it('tags, min amount, first and every Nth purchase, tiers', () => {
    const tagged = rule({ kind: 'fixed', points: 1, conditions: { tags: ['online'] } });
    const first = rule({ kind: 'fixed', points: 2, conditions: { first_purchase: true } });
    const third = rule({ kind: 'fixed', points: 4, conditions: { every_nth: 3 } });
    const gold = rule({ kind: 'fixed', points: 8, conditions: { tiers: ['gold'] } });
    const rules = [tagged, first, third, gold];
    const gave = (input: EvaluationInput) => evaluateRules(rules, input).total - input.base;
    expect(gave(purchase(100, { n: 1 }))).toBe(2);
    expect(gave(purchase(100, { n: 6, tags: ['online', 'store:1'] }))).toBe(1 + 4);
    expect(gave(purchase(100, { n: 2, tier: 'gold' }))).toBe(8);
    expect(evaluateRules([gold], purchase(100)).trace[0]?.reason).toBe('the member has no tier');
  });

  it('SKU and category conditions need line items', () => {
    const r = rule({ kind: 'multiplier', factor: 3, conditions: { skus: ['a'] } });
    expect(evaluateRules([r], purchase(1000)).trace[0]?.reason).toBe('no line matches its SKUs or categories');
  });
});

describe('combination', () => {
  it('stack adds, best keeps the best of its group, exclusive stops lower rules', () => {
    const stack = rule({ name: 'stack', kind: 'fixed', points: 1, priority: 1 });
    const b1 = rule({ name: 'b1', kind: 'fixed', points: 3, priority: 5, combination: 'best', group: 'g' });
    const b2 = rule({ name: 'b2', kind: 'fixed', points: 6, priority: 4, combination: 'best', group: 'g' });
    const e = evaluateRules([stack, b1, b2], purchase(1000));
    expect(e.applied.map((a) => a.amount)).toEqual([6, 1]);
    expect(e.trace.find((t) => t.rule_id === b1.id)?.reason).toBe('another rule of the group g gives more');
    const ex = rule({ name: 'ex', kind: 'fixed', points: 100, priority: 3, combination: 'exclusive' });
    const e2 = evaluateRules([stack, b1, b2, ex], purchase(1000));
    expect(e2.applied.map((a) => a.amount)).toEqual([6, 100]);
    expect(e2.trace.find((t) => t.rule_id === stack.id)?.reason).toBe(`the exclusive rule ${ex.id} applied before it`);
  });

  it('an exclusive multiplier may replace the base earn of its lines', () => {
    const r = rule({
      kind: 'multiplier',
      factor: 1.5,
      combination: 'exclusive',
      replaces_base: true,
      conditions: { skus: ['x'] },
    });
    const e = evaluateRules([r], purchase(3000, { lines: [line('x', 2000), line('y', 1000)] }));
    expect(e.base).toBe(10);
    expect(e.total).toBe(10 + 30);
  });
});

describe('caps and budgets', () => {
  it('cuts a rule to what its cap and budget have left, and says so', () => {
    const r = rule({ kind: 'fixed', points: 50, cap: { limit: 120, period: 'month' }, budget: 1000 });
    const e = evaluateRules([r], purchase(100, { usage: () => ({ member: 100, budget: 0 }) }));
    expect(e.applied).toMatchObject([{ amount: 20, capped: true, period_key: '2026-06' }]);
    expect(e.trace[0]?.cap).toEqual({ period: 'month', period_key: '2026-06', limit: 120, used: 100, remaining: 20 });
    const spent = evaluateRules([r], purchase(100, { usage: () => ({ member: 0, budget: 980 }) }));
    expect(spent.applied).toMatchObject([{ amount: 20, capped: true, exhausted_budget: true }]);
    expect(spent.trace[0]?.reason).toBe('its budget is spent');
  });

  it('names periods by local calendar dates', () => {
    const at = new Date('2026-03-29T22:30:00Z'); // Monday 2026-03-30 00:30 in Berlin (CEST)
    expect(periodKey('day', at, 'Europe/Berlin')).toBe('2026-03-30');
    expect(periodKey('week', at, 'Europe/Berlin')).toBe('w2026-03-30');
    expect(periodKey('week', at, 'UTC')).toBe('w2026-03-23');
    expect(periodKey('month', at, 'Pacific/Kiritimati')).toBe('2026-03');
    expect(periodKey('year', new Date('2026-12-31T23:00:00Z'), 'Asia/Tokyo')).toBe('2027');
    expect(periodKey('lifetime', at, 'UTC')).toBe('lifetime');
  });
});

describe('validation', () => {
  const problems = (over: Partial<RuleDefinition>, unit: 'points' | 'cashback' = 'points') =>
    ruleProblems(def(over), unit).map((p) => p.field);

  it('names the field of each problem', () => {
    expect(problems({ kind: 'bogus' as never })).toEqual(['kind']);
    expect(problems({ factor: 0 })).toEqual(['factor']);
    expect(problems({ factor: 100.5 })).toEqual(['factor']);
    expect(
      problems({
        factor: 2,
        conditions: { active_from: '2026-02-01T00:00:00Z', active_until: '2026-01-01T00:00:00Z' },
      }),
    ).toEqual(['conditions.active_until']);
    expect(problems({ factor: 2, conditions: { days_of_week: [] } })).toEqual(['conditions.days_of_week']);
    expect(problems({ factor: 2, conditions: { first_purchase: true, every_nth: 2 } })).toEqual([
      'conditions.every_nth',
    ]);
    expect(problems({ factor: 2, conditions: { time_of_day: { from: '10:00', until: '10:00' } } })).toEqual([
      'conditions.time_of_day.until',
    ]);
    expect(problems({ kind: 'event', points: 5 })).toEqual(['event']);
    expect(problems({ kind: 'event', event: 'x', points: 5, conditions: { skus: ['a'] } })).toEqual([
      'conditions.skus',
    ]);
    expect(problems({ kind: 'fixed', points: 5 }, 'cashback')).toEqual(['amount', 'points']);
    expect(problems({ factor: 2, cap: { limit: 0, period: 'day' }, budget: -1 })).toEqual(['cap.limit', 'budget']);
    expect(problems({ factor: 2, replaces_base: true })).toEqual(['replaces_base']);
    expect(
      problems({ kind: 'fixed', amount: 1, budget: 1e300, conditions: { min_amount: 1e300 } }, 'cashback'),
    ).toEqual(['conditions.min_amount', 'budget']);
    expect(problems({ kind: 'fixed', points: 1, cap: { limit: 1e300, period: 'day' } })).toEqual(['cap.limit']);
  });
});

describe('refunds by line', () => {
  const r = rule({ kind: 'multiplier', factor: 2, conditions: { skus: ['cake'] } });
  const fixed = rule({ kind: 'fixed', points: 30, conditions: { min_amount: 26 } });
  const e = evaluateRules([r, fixed], purchase(3000, { lines: [line('cake', 2000, 4), line('tea', 1000, 2)] }));

  it('takes back what the lines earned, bonuses included, and a fixed bonus the refund breaks', () => {
    expect(e.total).toBe(30 + 20 + 30);
    const one = refundByLines(e.allocation, { quantities: {}, fixed: [] }, [{ sku: 'cake', quantity: 1 }]);
    expect(one).toEqual({
      amount: 10 + 30,
      lines: [{ sku: 'cake', quantity: 1, amount: 10 }],
      fixed: [{ rule_id: fixed.id, version: 1, amount: 30 }],
    });
    const rest = refundByLines(e.allocation, { quantities: { cake: 1 }, fixed: [fixed.id] }, [
      { sku: 'cake', quantity: 3 },
      { sku: 'tea', quantity: 2 },
    ]);
    expect(rest).toMatchObject({ amount: 30 + 10, fixed: [] });
  });

  it('refuses lines that were not bought or are already refunded', () => {
    expect(refundByLines(e.allocation, { quantities: { tea: 2 }, fixed: [] }, [{ sku: 'tea', quantity: 1 }])).toEqual({
      problems: [{ field: 'line_items.0.quantity', message: 'only 0 of tea are left to refund' }],
    });
    expect(refundByLines(e.allocation, { quantities: {}, fixed: [] }, [{ sku: 'nope', quantity: 1 }])).toMatchObject({
      problems: [{ field: 'line_items.0.sku' }],
    });
  });

  it('spreads exactly', () => {
    expect(spread(10, [1, 1, 1])).toEqual([4, 3, 3]);
    expect(spread(7, [0, 0])).toEqual([4, 3]);
    expect(spread(0, [5])).toEqual([0]);
  });

  it('spreads by the largest remainders, ties to the earlier, for any number of weights', () => {
    // The definition, in BigInt and by sorting: what spread() must answer however it computes it.
    const reference = (amount: number, weights: number[]): number[] => {
      const w = weights.every((x) => x === 0) ? weights.map(() => 1n) : weights.map(BigInt);
      const total = w.reduce((a, b) => a + b, 0n);
      const shares = w.map((x) => (BigInt(amount) * x) / total);
      let left = BigInt(amount) - shares.reduce((a, b) => a + b, 0n);
      const order = w.map((x, i) => ({ i, r: (BigInt(amount) * x) % total }));
      order.sort((a, b) => (b.r > a.r ? 1 : b.r < a.r ? -1 : a.i - b.i));
      for (const { i } of order) if (left-- > 0n) shares[i]! += 1n;
      return shares.map(Number);
    };
    fc.assert(
      fc.property(fc.nat(1_000_000), fc.array(fc.nat(100_000), { minLength: 1, maxLength: 40 }), (amount, weights) => {
        const got = spread(amount, weights);
        expect(got).toEqual(reference(amount, weights));
        expect(got.reduce((a, b) => a + b, 0)).toBe(amount);
      }),
      { numRuns: 2_000 },
    );
  });
});
