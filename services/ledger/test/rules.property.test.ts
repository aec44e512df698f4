import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decimal } from '../src/domain/money.ts';
import { pointsFor } from '../src/domain/formulas.ts';
import {
  evaluateRules,
  periodKey,
  refundByLines,
  type Period,
  type RefundedBefore,
} from '../src/domain/rules/index.ts';
import { compiled, modelEarn, modelRule, type ModelRule } from './rules-model.ts';

/**
 * The evaluator against the small model of rules-model.ts, over random rule sets and random sequences of
 * purchases and clock moves for a few members: same points for every purchase, no member cap and
 * no budget ever passed. And refunds by line over random purchases: never more than the purchase
 * earned, and everything once every line is refunded.
 */
const RATIO = decimal(1, 6);
const TZ = 'America/New_York';

const step = fc.record({
  member: fc.integer({ min: 1, max: 3 }),
  cents: fc.integer({ min: 1, max: 6000 }),
  advanceHours: fc.integer({ min: 0, max: 60 }),
});

describe('evaluator against the model', () => {
  it('same points, caps and budgets never passed', () => {
    fc.assert(
      fc.property(
        fc.array(modelRule, { minLength: 0, maxLength: 6 }),
        fc.array(step, { minLength: 1, maxLength: 25 }),
        (rs, steps) => {
          const { model, real } = compiled(rs);
          const memberUse = new Map<string, number>(); // rule:member:period -> given
          const budgetUse = new Map<number, number>();
          let at = Date.parse('2026-03-07T12:00:00Z'); // the weekend of a DST change in New York
          for (const s of steps) {
            at += s.advanceHours * 3_600_000;
            const when = new Date(at);
            const key = (r: { id: number; cap: { period: Period } | null }) =>
              `${r.id}:${s.member}:${r.cap ? periodKey(r.cap.period, when, TZ) : ''}`;
            const used = (r: { id: number; cap: { period: Period } | null }) => memberUse.get(key(r)) ?? 0;
            const real_ = evaluateRules(real, {
              unit: 'points',
              at: when,
              timeZone: TZ,
              tier: null,
              occasion: { kind: 'purchase', cents: s.cents, lines: null, tags: [], purchaseNumber: 2 },
              base: pointsFor(s.cents, RATIO),
              baseOf: (c) => pointsFor(c, RATIO),
              usage: (r) => ({ member: used(r), budget: budgetUse.get(r.id) ?? 0 }),
            });
            const left = (r: ModelRule) =>
              Math.min(
                r.cap ? r.cap.limit - used(r) : Infinity,
                r.budget === null ? Infinity : r.budget - (budgetUse.get(r.id) ?? 0),
              );
            const expected = modelEarn(model, s.cents, left);
            expect(real_.total).toBe(expected.total);
            for (const a of real_.applied) {
              const r = model.find((m) => m.id === a.rule_id);
              if (!r) throw new Error('unknown rule applied');
              memberUse.set(key(r), used(r) + a.amount);
              budgetUse.set(r.id, (budgetUse.get(r.id) ?? 0) + a.amount);
              if (r.cap) expect(used(r)).toBeLessThanOrEqual(r.cap.limit);
              if (r.budget !== null) expect(budgetUse.get(r.id)).toBeLessThanOrEqual(r.budget);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

const lineArb = fc.record({
  quantity: fc.integer({ min: 1, max: 4 }),
  unit: fc.integer({ min: 1, max: 3000 }),
  category: fc.constantFrom('pastry', 'drink'),
});

describe('refunds by line', () => {
  it('never take back more than the purchase earned, and all of it once every unit is refunded', () => {
    fc.assert(
      fc.property(
        fc.array(lineArb, { minLength: 1, maxLength: 5 }),
        fc.array(modelRule, { maxLength: 4 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 4 })), { maxLength: 8 }),
        (ls, rs, refunds) => {
          const lines = ls.map((l, i) => ({
            sku: `s${i}`,
            category: l.category,
            quantity: l.quantity,
            cents: l.quantity * l.unit,
          }));
          const cents = lines.reduce((a, l) => a + l.cents, 0);
          const { real } = compiled(rs.map((r) => ({ ...r, cap: null, budget: null })));
          const e = evaluateRules(real, {
            unit: 'points',
            at: new Date('2026-06-01T10:00:00Z'),
            timeZone: 'UTC',
            tier: null,
            occasion: { kind: 'purchase', cents, lines, tags: [], purchaseNumber: 1 },
            base: pointsFor(cents, RATIO),
            baseOf: (c) => pointsFor(c, RATIO),
            usage: () => ({ member: 0, budget: 0 }),
          });
          const before: RefundedBefore = { quantities: {}, fixed: [] };
          let taken = 0;
          const take = (sku: string, quantity: number) => {
            const r = refundByLines(e.allocation, before, [{ sku, quantity }]);
            if ('problems' in r) return;
            taken += r.amount;
            before.quantities[sku] = (before.quantities[sku] ?? 0) + quantity;
            before.fixed.push(...r.fixed.map((f) => f.rule_id));
            expect(taken).toBeLessThanOrEqual(e.total);
          };
          for (const [i, q] of refunds) take(`s${i % lines.length}`, q);
          lines.forEach((l) => {
            const rest = l.quantity - (before.quantities[l.sku] ?? 0);
            if (rest > 0) take(l.sku, rest);
          });
          expect(taken).toBe(e.total);
        },
      ),
      { numRuns: 300 },
    );
  });
});
