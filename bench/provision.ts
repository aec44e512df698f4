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

export interface Fixture {
  tenantId: number;
  app: AppCredentials;
  pointsCardId: number;
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
    cashbackCardId: cashbackCard.id,
    members,
    historyMemberId,
    redeemers,
  };
}
