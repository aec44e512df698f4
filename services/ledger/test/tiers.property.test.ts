import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import type { RunningLedger } from '../src/service.ts';
import { email, pointsCard, type Api } from './support.ts';

/**
 * The running system (gateway, ledger SQL, the tier sweep, on the injectable clock) against a small
 * model of tiers, over random sequences of earns, refunds and clock moves across day and window
 * edges for three members: after every step each member's qualifying total, tier and validity are
 * the model's, and each earn's answer says `upgraded` exactly when the model upgrades.
 */
let sys: TestSystem;
let api: Api;
let tenantId: number;
const DAY = 86_400_000;
const N = 10;
const STEPS = [
  { name: 'Bronze', rank: 0, entry: 0, retain: 0 },
  { name: 'Silver', rank: 1, entry: 100, retain: 80 },
  { name: 'Gold', rank: 2, entry: 300, retain: 250 },
];

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger'] });
  const t = await sys.tenant({ scopes: ['points_read', 'points_write', 'card_read', 'programme_manage'] });
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
});
afterAll(async () => {
  await sys?.stop();
});

interface ModelMember {
  days: Map<number, number>;
  rank: number;
  /** A day index (UTC midnight); null: no end. */
  until: number | null;
}

const dayOf = (ms: number) => Math.floor(ms / DAY);
const sum = (m: ModelMember, from: number, to: number) =>
  [...m.days.entries()].filter(([d]) => d >= from && d < to).reduce((a, [, v]) => a + v, 0);
const reach = (total: number) => STEPS.filter((s) => s.entry <= Math.max(0, total)).at(-1)!.rank;

/** Reviews due at `now` (as many as time allows), as the sweep does them. */
function review(m: ModelMember, now: number): void {
  while (m.until !== null && m.until * DAY <= now) {
    const judged = Math.max(0, sum(m, m.until - N, m.until));
    const to = STEPS.filter((s) => s.rank <= m.rank && s.retain <= judged).at(-1)!.rank;
    m.until = to === 0 ? null : m.until + N;
    m.rank = to;
  }
}

type Step =
  | { kind: 'earn'; member: number; amount: number }
  | { kind: 'refund'; member: number; amount: number }
  | { kind: 'wait'; hours: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('earn' as const),
      member: fc.nat(2),
      amount: fc.integer({ min: 1, max: 160 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('refund' as const),
      member: fc.nat(2),
      amount: fc.integer({ min: 1, max: 120 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('wait' as const), hours: fc.integer({ min: 1, max: 24 * 12 }) }),
  },
);

describe('tiers against a model', () => {
  it('agree on qualifying totals, upgrades, renewals and downgrades', async () => {
    const ledger = () => sys.services.ledger as RunningLedger;
    const run = async (steps: Step[]) => {
      const card = await pointsCard(sys, tenantId);
      const put = await api('PUT', `/api/v1/loyalty/cards/${card}/tiers`, {
        body: {
          tiers: STEPS.map((s) => ({
            name: s.name,
            rank: s.rank,
            entry_threshold: s.entry,
            retain_threshold: s.retain,
          })),
          window: 'rolling',
          window_days: N,
        },
      });
      expect(put.status, JSON.stringify(put.body)).toBe(200);
      const ids: number[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await api('POST', '/api/v1/loyalty/points/earn', {
          body: { card_id: card, email: email(`model${i}`), purchase_amount: 0.01 },
        });
        ids.push((r.body.data as { member_id: number }).member_id);
      }
      const model: ModelMember[] = ids.map(() => ({ days: new Map(), rank: 0, until: null }));
      for (const s of steps) {
        const now = sys.clock.now().getTime();
        if (s.kind === 'wait') {
          sys.clock.advance(s.hours * 3_600_000);
          for (let i = 0; i < 10; i++) {
            const done = await ledger().hooks.sweepTiers();
            if (done.renewed + done.downgraded === 0) break;
          }
          for (const m of model) review(m, sys.clock.now().getTime());
        } else if (s.kind === 'earn') {
          const m = model[s.member]!;
          const r = await api('POST', '/api/v1/loyalty/points/earn', {
            body: { card_id: card, member_id: ids[s.member], purchase_amount: s.amount },
          });
          expect(r.status, JSON.stringify(r.body)).toBe(200);
          const d = dayOf(now);
          m.days.set(d, (m.days.get(d) ?? 0) + s.amount);
          const to = reach(sum(m, d - N + 1, d + 1));
          const upgraded = to > m.rank;
          if (upgraded) {
            m.rank = to;
            m.until = d + 1 + N;
          }
          expect((r.body.data as { tier: { upgraded: boolean } }).tier.upgraded).toBe(upgraded);
        } else {
          const m = model[s.member]!;
          const r = await api('POST', '/api/v1/loyalty/points/refund', {
            body: { card_id: card, member_id: ids[s.member], refund_amount: s.amount },
          });
          expect(r.status, JSON.stringify(r.body)).toBe(200);
          const deducted = (r.body.data as { points_deducted: number }).points_deducted;
          const d = dayOf(now);
          if (deducted > 0) m.days.set(d, (m.days.get(d) ?? 0) - deducted);
        }
        const today = dayOf(sys.clock.now().getTime());
        for (const [i, m] of model.entries()) {
          const r = await api('GET', `/api/v1/loyalty/cards/${card}/members/${ids[i]}/tier`);
          expect(r.body.data, JSON.stringify({ step: s, model: { ...m, days: [...m.days] } })).toMatchObject({
            tier: { rank: m.rank },
            qualifying_total: Math.max(0, sum(m, today - N + 1, today + 1)),
            valid_until: m.until === null ? null : new Date(m.until * DAY).toISOString(),
          });
        }
      }
    };
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), run), { numRuns: 15 });
  }, 240_000);
});
