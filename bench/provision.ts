// The benchmark tenant: one sandbox tenant and app, a points card and a cashback card, members with
// a points account, one member with a long points history, and the few token-holding members the
// redemption scenario concentrates on. Everything through the public and operator APIs.
import { randomBytes } from 'node:crypto';
import { Api, pMap, type AppCredentials } from './api.ts';

export const POINTS_RATIO = 1;
export const CASHBACK_PERCENT = 5;
/** What one redemption takes, in cents. */
export const REDEEM_AMOUNT_CENTS = 10;

export interface Redeemer {
  memberId: number;
  token: string;
  startCents: number;
}

/**
 * The purchase of the rules scenario: 20 lines over 5 categories (each line one SKU), whose total
 * is the purchase amount.
 */
const RULES_LINES = Array.from({ length: 20 }, (_, k) => ({
  sku: `sku-${k}`,
  category: `cat-${k % 5}`,
  quantity: 1 + (k % 3),
  unit_price: 1 + (k % 4) / 2,
}));
export const RULES_PURCHASE = {
  purchase_amount: RULES_LINES.reduce((a, l) => a + l.quantity * l.unit_price * 100, 0) / 100,
  line_items: RULES_LINES,
  tags: ['store:1'],
};

/**
 * 25 active rules of the kinds a purchase meets, one best group, and no rule that keeps state
 * (caps, budgets, first or Nth purchase): those earns share the group-committed posting statement.
 * A card with a capped rule takes a transaction per earn instead (docs/decisions/earning-rules.md).
 */
function benchRules(): Record<string, unknown>[] {
  const rules: Record<string, unknown>[] = [];
  for (let k = 0; k < 10; k++)
    rules.push({ name: `cat x${k}`, kind: 'multiplier', factor: 1.5, conditions: { categories: [`cat-${k % 5}`] } });
  for (let k = 0; k < 5; k++)
    rules.push({
      name: `sku +${k}`,
      kind: 'per_amount',
      points: 1,
      conditions: { skus: [`sku-${k}`, `sku-${k + 10}`] },
    });
  for (let k = 0; k < 5; k++)
    rules.push({
      name: `basket ${k}`,
      kind: 'fixed',
      points: 5 + k,
      conditions: { min_amount: 10 * k, tags: ['store:1'] },
    });
  for (let k = 0; k < 3; k++)
    rules.push({ name: `best ${k}`, kind: 'fixed', points: 3 + k, combination: 'best', group: 'g' });
  rules.push({
    name: 'weekdays',
    kind: 'fixed',
    points: 2,
    conditions: { days_of_week: ['mon', 'tue', 'wed', 'thu', 'fri'] },
  });
  rules.push({
    name: 'lunch',
    kind: 'fixed',
    points: 2,
    conditions: { time_of_day: { from: '11:30', until: '14:00' } },
  });
  return rules;
}

/**
 * The ladder of the tiers scenario (points earned over a rolling year), and its rules: a multiplier
 * and a fixed bonus per tier above the lowest, one rule for the lowest, so every earn on the card
 * reads the member's tier and one of its rules applies.
 */
export const BENCH_LADDER = {
  tiers: [
    { name: 'bronze', rank: 1, entry_threshold: 0, retain_threshold: 0 },
    { name: 'silver', rank: 2, entry_threshold: 200, retain_threshold: 150 },
    { name: 'gold', rank: 3, entry_threshold: 1000, retain_threshold: 800 },
  ],
  metric: 'points_earned',
  window: 'rolling',
  window_days: 365,
};
function benchTierRules(): Record<string, unknown>[] {
  return [
    { name: 'bronze +1', kind: 'fixed', points: 1, conditions: { tiers: ['bronze'] } },
    { name: 'silver x1.25', kind: 'multiplier', factor: 1.25, conditions: { tiers: ['silver'] } },
    { name: 'silver +5', kind: 'fixed', points: 5, conditions: { tiers: ['silver'] } },
    { name: 'gold x1.5', kind: 'multiplier', factor: 1.5, conditions: { tiers: ['gold'] } },
    { name: 'gold +10', kind: 'fixed', points: 10, conditions: { tiers: ['gold'] } },
  ];
}

export interface Fixture {
  tenantId: number;
  app: AppCredentials;
  pointsCardId: number;
  /** A points card with 25 active earning rules (the rules scenario). */
  rulesCardId: number;
  /** A points card with three tiers and five rules with a tier condition (the tiers scenario). */
  tiersCardId: number;
  cashbackCardId: number;
  /** Members with a points account (earn and balance scenarios). */
  members: number[];
  /** A member whose points journal has `historyRows` entries. */
  historyMemberId: number;
  /** Redemption accounts, one set per measured or warm-up run so each starts from the same balance. */
  redeemers: Record<'warmup' | 'full' | 'baseline' | 'tuned', Redeemer[]>;
}

const tag = () => randomBytes(4).toString('hex');

export async function provision(
  api: Api,
  opts: {
    members: number;
    historyRows: number;
    redeemAccounts: number;
    redeemStartCents: number;
    concurrency: number;
    log: (line: string) => void;
  },
): Promise<Fixture> {
  const run = tag();
  const { tenant } = await api.admin<{ tenant: { id: number } }>('POST', '/admin/v1/tenants', {
    name: `bench ${run}`,
    sandbox: true,
  });
  const { app: created } = await api.admin<{ app: { app_id: string; api_key: string } }>(
    'POST',
    `/admin/v1/tenants/${tenant.id}/apps`,
    {
      name: 'bench',
      scopes: ['points_read', 'points_write', 'cashback_read', 'cashback_write', 'card_read', 'webhooks_manage'],
    },
  );
  const app = { appId: created.app_id, apiKey: created.api_key };
  const { card: pointsCard } = await api.admin<{ card: { id: number } }>(
    'POST',
    `/admin/v1/tenants/${tenant.id}/cards`,
    {
      name: 'Bench points',
      reward_system: 'points',
      points_ratio: POINTS_RATIO,
    },
  );
  const { card: cashbackCard } = await api.admin<{ card: { id: number } }>(
    'POST',
    `/admin/v1/tenants/${tenant.id}/cards`,
    {
      name: 'Bench cashback',
      reward_system: 'cashback',
      cashback_config: { cashback_percentage: CASHBACK_PERCENT, cashback_min_amount: 0, cashback_max_amount: null },
    },
  );

  const { card: rulesCard } = await api.admin<{ card: { id: number } }>(
    'POST',
    `/admin/v1/tenants/${tenant.id}/cards`,
    {
      name: 'Bench rules',
      reward_system: 'points',
      points_ratio: POINTS_RATIO,
      time_zone: 'Europe/Lisbon',
    },
  );
  for (const rule of benchRules())
    await api.admin('POST', `/admin/v1/tenants/${tenant.id}/cards/${rulesCard.id}/rules`, {
      ...rule,
      status: 'active',
    });

  const { card: tiersCard } = await api.admin<{ card: { id: number } }>(
    'POST',
    `/admin/v1/tenants/${tenant.id}/cards`,
    { name: 'Bench tiers', reward_system: 'points', points_ratio: POINTS_RATIO },
  );
  await api.admin('PUT', `/admin/v1/tenants/${tenant.id}/cards/${tiersCard.id}/tiers`, BENCH_LADDER);
  for (const rule of benchTierRules())
    await api.admin('POST', `/admin/v1/tenants/${tenant.id}/cards/${tiersCard.id}/rules`, {
      ...rule,
      status: 'active',
    });

  // Members are created the way a shop creates them: the first earn with an unknown email.
  opts.log(`provisioning ${opts.members} members (points earn by email)`);
  const members = await pMap(
    Array.from({ length: opts.members }, (_, i) => i),
    opts.concurrency,
    async (i) => {
      const data = await api.ok<{ member_id: number }>(app, 'POST', '/api/v1/loyalty/points/earn', {
        body: {
          card_id: pointsCard.id,
          email: `bench-${run}-${i}@example.com`,
          member_name: `Bench member ${i}`,
          purchase_amount: 10,
        },
      });
      return data.member_id;
    },
  );

  // Every member holds a tier on the tiers card before its scenario (a third each of bronze, silver
  // and gold), so the measured earns update an account, a day and a tier row as a running programme's do.
  opts.log(`giving the ${members.length} members a tier on the tiers card`);
  await pMap(members, opts.concurrency, async (memberId, i) => {
    await api.ok(app, 'POST', '/api/v1/loyalty/points/earn', {
      body: { card_id: tiersCard.id, member_id: memberId, purchase_amount: [50, 300, 1200][i % 3] },
    });
  });

  // Kept out of the earn pool so its history stays at exactly historyRows entries until the growth figure.
  opts.log(`building a points history of ${opts.historyRows} entries for one member`);
  const first = await api.ok<{ member_id: number }>(app, 'POST', '/api/v1/loyalty/points/earn', {
    body: {
      card_id: pointsCard.id,
      email: `bench-${run}-history@example.com`,
      member_name: 'Bench history',
      purchase_amount: 10,
    },
  });
  const historyMemberId = first.member_id;
  await pMap(
    Array.from({ length: opts.historyRows - 1 }, (_, i) => i),
    opts.concurrency,
    async (i) => {
      await api.ok(app, 'POST', '/api/v1/loyalty/points/earn', {
        body: { card_id: pointsCard.id, member_id: historyMemberId, purchase_amount: 1 + (i % 50) },
      });
    },
  );

  opts.log(`provisioning ${opts.redeemAccounts} x 3 redemption accounts (register, verify-otp, cashback earn)`);
  const makeRedeemer = async (set: string, i: number): Promise<Redeemer> => {
    const email = `bench-${run}-redeem-${set}-${i}@example.com`;
    const phone = `+1555${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}${i}`;
    const reg = await api.ok<{ member: { id: number }; otp_code: string }>(
      app,
      'POST',
      '/api/v1/auth/member/register',
      {
        body: { name: `Bench redeemer ${set} ${i}`, email, phone },
      },
    );
    const verified = await api.ok<{ member_token: string }>(app, 'POST', '/api/v1/auth/member/verify-otp', {
      body: { email, code: reg.otp_code },
    });
    // purchase x 5% = the starting balance
    const purchase = opts.redeemStartCents / CASHBACK_PERCENT;
    const earned = await api.ok<{ new_balance: number }>(app, 'POST', '/api/v1/cashback/cashback/earn', {
      body: { card_id: cashbackCard.id, member_id: reg.member.id, purchase_amount: purchase },
    });
    if (Math.round(earned.new_balance * 100) !== opts.redeemStartCents)
      throw new Error(`redemption account got ${earned.new_balance}, expected ${opts.redeemStartCents / 100}`);
    return { memberId: reg.member.id, token: verified.member_token, startCents: opts.redeemStartCents };
  };
  const redeemers = {
    warmup: await pMap(
      Array.from({ length: opts.redeemAccounts }, (_, i) => i),
      4,
      (i) => makeRedeemer('w', i),
    ),
    full: await pMap(
      Array.from({ length: opts.redeemAccounts }, (_, i) => i),
      4,
      (i) => makeRedeemer('f', i),
    ),
    baseline: await pMap(
      Array.from({ length: opts.redeemAccounts }, (_, i) => i),
      4,
      (i) => makeRedeemer('b', i),
    ),
    tuned: await pMap(
      Array.from({ length: opts.redeemAccounts }, (_, i) => i),
      4,
      (i) => makeRedeemer('t', i),
    ),
  };
  return {
    tenantId: tenant.id,
    app,
    pointsCardId: pointsCard.id,
    rulesCardId: rulesCard.id,
    tiersCardId: tiersCard.id,
    cashbackCardId: cashbackCard.id,
    members,
    historyMemberId,
    redeemers,
  };
}
