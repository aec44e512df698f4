import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityOperations, ledgerAdminOperations, pointsOperations, ruleAdminOperations } from '@loyalty/contracts';
import {
  newTenantId,
  operatorMeta,
  publicMeta,
  startService,
  type ServiceRunner,
} from '../../../test/support/service-runner.ts';
import { periodKey } from '../src/domain/rules/index.ts';
import { modelEarn, modelRule, ruleBody, type ModelRule } from './rules-model.ts';
import { lotsAgree } from './support.ts';

/**
 * The running ledger (its SQL, over NATS, with a ManualClock) against the small model of the
 * rules (rules-model.ts), over random rule sets and random sequences of purchases of three
 * members, refunds by line and clock moves across a DST change: every earn gives the model's
 * points, no cap counter and no budget ever passes its limit, a refund never takes back more than
 * its purchase has left, and refunding every line of a purchase takes back exactly what it earned.
 */
let ledger: ServiceRunner<'ledger'>;
let tenantId: number;
let cards = 0;
const TZ = 'America/New_York';
const HOUR = 3_600_000;
const p = pointsOperations;

beforeAll(async () => {
  ledger = await startService('ledger');
  // Identity says every tenant the operator names exists (the ledger asks before making a card).
  await ledger.fake(identityOperations.getTenant, (_d, meta) => ({ tenant: { id: meta.tenant_id, sandbox: false } }));
  tenantId = newTenantId();
  await ledger.fake(identityOperations.resolveMember, (d) => ({
    member: { id: d.member_id ?? 0, name: 'M', email: null, phone: null, has_email: false, is_active: true },
    created: false,
  }));
  // The weekend New York leaves standard time (Sunday 8 March 2026, 02:00 local).
  ledger.clock.advance(Date.parse('2026-03-07T12:00:00Z') - ledger.clock.now().getTime());
});
afterAll(async () => ledger?.stop());

type Step =
  | { kind: 'earn'; member: number; lines: [number, number][] }
  | { kind: 'refund'; purchase: number; line: number; quantity: number }
  | { kind: 'advance'; hours: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('earn' as const),
      member: fc.integer({ min: 1, max: 3 }),
      lines: fc.array(fc.tuple(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 2000 })), {
        minLength: 1,
        maxLength: 3,
      }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('refund' as const),
      purchase: fc.nat(),
      line: fc.nat(),
      quantity: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), hours: fc.integer({ min: 1, max: 30 }) }),
  },
);

interface Purchase {
  reference: string;
  member: number;
  earned: number;
  refunded: number;
  lines: { sku: string; quantity: number; left: number }[];
}

async function setUp(rules: Omit<ModelRule, 'id'>[]): Promise<{ card: number; model: ModelRule[] }> {
  cards += 1;
  const { card } = await ledger.request(ledgerAdminOperations['admin.card.create'], operatorMeta(), {
    tenant_id: tenantId,
    name: `Rules ${cards}`,
    reward_system: 'points',
    points_ratio: 1,
    time_zone: TZ,
  });
  const model: ModelRule[] = [];
  for (const r of rules) {
    const { rule } = await ledger.request(ruleAdminOperations['admin.rules.create'], operatorMeta(), {
      tenant_id: tenantId,
      card_id: card.id,
      ...ruleBody(r),
      replaces_base: false,
      status: 'active',
    });
    model.push({ ...r, id: rule.id });
  }
  return { card: card.id, model };
}

async function refund(card: number, purchase: Purchase, lines: { sku: string; quantity: number }[]): Promise<number> {
  const r = await ledger.request(p['points.refund'], publicMeta(tenantId), {
    card_id: card,
    member_id: purchase.member,
    refund_amount: 0.01,
    reference: purchase.reference,
    line_items: lines,
  });
  expect(r.points_deducted).toBeLessThanOrEqual(purchase.earned - purchase.refunded);
  purchase.refunded += r.points_deducted;
  for (const l of lines) {
    const line = purchase.lines.find((x) => x.sku === l.sku);
    if (line) line.left -= l.quantity;
  }
  return r.points_deducted;
}

async function run(rules: Omit<ModelRule, 'id'>[], steps: Step[]): Promise<void> {
  const { card, model } = await setUp(rules);
  const used = new Map<string, number>();
  const budgets = new Map<number, number>();
  const purchases: Purchase[] = [];
  for (const [i, s] of steps.entries()) {
    const where = `step ${i} ${JSON.stringify(s)} of ${JSON.stringify(steps)} with ${JSON.stringify(rules)}`;
    if (s.kind === 'advance') ledger.clock.advance(s.hours * HOUR);
    else if (s.kind === 'earn') {
      const lines = s.lines.map(([quantity, cents], j) => ({ sku: `s${j}`, quantity, unit_price: cents / 100 }));
      const cents = s.lines.reduce((a, [q, c]) => a + q * c, 0);
      const reference = `c${card}-${i}`;
      const r = await ledger.request(p['points.earn'], publicMeta(tenantId), {
        card_id: card,
        member_id: s.member,
        purchase_amount: cents / 100,
        reference,
        line_items: lines,
      });
      const at = new Date(r.earned_at);
      const key = (m: ModelRule) => `${m.id}:${s.member}:${m.cap ? periodKey(m.cap.period, at, TZ) : ''}`;
      const left = (m: ModelRule) =>
        Math.min(
          m.cap ? m.cap.limit - (used.get(key(m)) ?? 0) : Infinity,
          m.budget === null ? Infinity : m.budget - (budgets.get(m.id) ?? 0),
        );
      const expected = modelEarn(model, cents, left);
      expect(r.points_earned, where).toBe(expected.total);
      for (const [id, gave] of expected.gave) {
        const m = model.find((x) => x.id === id);
        if (!m || gave === 0) continue;
        used.set(key(m), (used.get(key(m)) ?? 0) + gave);
        budgets.set(id, (budgets.get(id) ?? 0) + gave);
      }
      purchases.push({
        reference,
        member: s.member,
        earned: r.points_earned,
        refunded: 0,
        lines: lines.map((l) => ({ sku: l.sku, quantity: l.quantity, left: l.quantity })),
      });
    } else if (purchases.length > 0) {
      const purchase = purchases[s.purchase % purchases.length]!;
      const line = purchase.lines[s.line % purchase.lines.length]!;
      if (line.left >= s.quantity) await refund(card, purchase, [{ sku: line.sku, quantity: s.quantity }]);
    }
  }
  // Everything left, line by line: each purchase gives back exactly what it earned.
  for (const purchase of purchases) {
    const rest = purchase.lines.filter((l) => l.left > 0).map((l) => ({ sku: l.sku, quantity: l.left }));
    if (rest.length > 0) await refund(card, purchase, rest);
    expect(purchase.refunded, JSON.stringify(purchase)).toBe(purchase.earned);
  }
  const counters = await ledger.db.query<{ rule_id: string; given: string }>(
    `SELECT u.rule_id, u.given FROM ledger.rule_member_usage u JOIN ledger.rules r ON r.id = u.rule_id WHERE r.card_id = $1`,
    [card],
  );
  for (const c of counters.rows) {
    const m = model.find((x) => x.id === Number(c.rule_id));
    expect(Number(c.given)).toBeLessThanOrEqual(m?.cap?.limit ?? 0);
  }
  const spent = await ledger.db.query<{ id: string; budget_used: string }>(
    'SELECT id, budget_used FROM ledger.rules WHERE card_id = $1',
    [card],
  );
  for (const b of spent.rows) {
    const m = model.find((x) => x.id === Number(b.id));
    if (m?.budget != null) expect(Number(b.budget_used)).toBeLessThanOrEqual(m.budget);
  }
  expect(await lotsAgree(ledger, card)).toBeGreaterThanOrEqual(0);
}

describe('the ledger against the rules model', () => {
  it('same points, caps and budgets never passed, refunds exact', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(modelRule, { maxLength: 5 }), fc.array(step, { minLength: 1, maxLength: 14 }), run),
      { numRuns: 25 },
    );
  }, 300_000);
});
