import fc from 'fast-check';
import { compileRule, type CompiledRule, type RuleDefinition } from '../src/domain/rules/index.ts';

/**
 * A small model of the earning rules, written from the documented combination order with
 * integer factors and rates only (so it needs no decimals): the property tests compare the
 * evaluator (rules.property.test.ts) and the running ledger (rules.service-property.test.ts) with it.
 */
export interface ModelRule {
  id: number;
  kind: 'multiplier' | 'per_amount' | 'fixed';
  value: number;
  priority: number;
  combination: 'stack' | 'best' | 'exclusive';
  group: string;
  min: number | null;
  cap: { limit: number; period: 'day' | 'week' | 'lifetime' } | null;
  budget: number | null;
}

export const modelRule = fc.record({
  kind: fc.constantFrom('multiplier' as const, 'per_amount' as const, 'fixed' as const),
  value: fc.integer({ min: 1, max: 5 }),
  priority: fc.integer({ min: -2, max: 2 }),
  combination: fc.constantFrom('stack' as const, 'best' as const, 'exclusive' as const),
  group: fc.constantFrom('a', 'b'),
  min: fc.option(fc.integer({ min: 1, max: 50 }), { nil: null }),
  cap: fc.option(
    fc.record({
      limit: fc.integer({ min: 1, max: 40 }),
      period: fc.constantFrom('day' as const, 'week' as const, 'lifetime' as const),
    }),
    { nil: null },
  ),
  budget: fc.option(fc.integer({ min: 1, max: 120 }), { nil: null }),
});

export function compiled(rules: Omit<ModelRule, 'id'>[]): { model: ModelRule[]; real: CompiledRule[] } {
  const model = rules.map((r, i) => ({ ...r, id: i + 1 }));
  const real = model.map((r) => {
    const d: RuleDefinition = {
      name: `r${r.id}`,
      kind: r.kind,
      priority: r.priority,
      combination: r.combination,
      group: r.group,
      replaces_base: false,
      ...(r.kind === 'multiplier' ? { factor: r.value } : { points: r.value }),
      conditions: r.min === null ? {} : { min_amount: r.min },
      cap: r.cap,
      budget: r.budget,
    };
    return compileRule({ id: r.id, version: 1 }, d, 'points');
  });
  return { model, real };
}

/** The model: base floor(amount); rules by priority; caps cut; best per group; exclusive stops. */
export function modelEarn(
  rules: ModelRule[],
  cents: number,
  left: (r: ModelRule) => number,
): { total: number; gave: Map<number, number> } {
  const base = Math.floor(cents / 100);
  const gave = new Map<number, number>();
  const bestOf = new Map<string, { id: number; give: number }>();
  const sorted = [...rules].sort((a, b) => b.priority - a.priority || a.id - b.id);
  for (const r of sorted) {
    if (r.min !== null && cents < r.min * 100) continue;
    const raw =
      r.kind === 'fixed'
        ? r.value
        : r.kind === 'per_amount'
          ? Math.floor((cents * r.value) / 100)
          : base * (r.value - 1);
    const give = Math.min(raw, left(r));
    if (r.combination === 'best') {
      const held = bestOf.get(r.group);
      if (!held || give > held.give) bestOf.set(r.group, { id: r.id, give });
      continue;
    }
    gave.set(r.id, give);
    if (r.combination === 'exclusive') break;
  }
  for (const b of bestOf.values()) gave.set(b.id, b.give);
  return { total: base + [...gave.values()].reduce((a, b) => a + b, 0), gave };
}

/** The definition the API takes for a model rule. */
export function ruleBody(r: Omit<ModelRule, 'id'>) {
  return {
    name: `${r.kind} ${r.combination} ${r.value}`,
    kind: r.kind,
    priority: r.priority,
    combination: r.combination,
    group: r.group,
    ...(r.kind === 'multiplier' ? { factor: r.value } : { points: r.value }),
    conditions: r.min === null ? {} : { min_amount: r.min },
    cap: r.cap,
    budget: r.budget,
  };
}
