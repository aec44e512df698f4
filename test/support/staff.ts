import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { apiClient, staffClient, type TestSystem } from './system.ts';

type Api = ReturnType<typeof apiClient>;
export type StaffApi = ReturnType<typeof staffClient>;

/** Polls `check` until it returns a value that is not undefined (events are relayed asynchronously). */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error('eventually: the condition did not hold in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A staff user of a sandbox tenant signs in: the code comes back in the response. */
export async function signIn(staff: StaffApi, tenantId: number, email: string): Promise<string> {
  const requested = await staff('POST', '/staff/v1/auth/request-code', { body: { tenant_id: tenantId, email } });
  expect(requested.status, JSON.stringify(requested.body)).toBe(200);
  const code = requested.body.data!.code as string;
  const verified = await staff('POST', '/staff/v1/auth/verify-code', { body: { tenant_id: tenantId, email, code } });
  expect(verified.status, JSON.stringify(verified.body)).toBe(200);
  return verified.body.data!.staff_token as string;
}

export interface ConsoleTenant {
  tenantId: number;
  api: Api;
  pointsCard: number;
  cashbackCard: number;
  reward: number;
  managerEmail: string;
  /** Members with points (150 each), by name. */
  members: { id: number; email: string; name: string }[];
  /** Pending claims (reward of 100 points), one per member in order. */
  claims: number[];
}

/**
 * A sandbox tenant as a merchant would have it: an app, a points card (1 point per unit) with a
 * 100-point reward and referral bonuses, a cashback card (10 %), a first manager made by the
 * operator, `memberCount` members who earned 150 points and cashback, each with a pending claim.
 */
export async function consoleTenant(sys: TestSystem, memberCount = 2): Promise<ConsoleTenant> {
  const { tenant } = await sys.admin<{ tenant: { id: number } }>('POST', '/admin/v1/tenants', {
    name: 'Corner Coffee',
    sandbox: true,
  });
  const tenantId = tenant.id;
  const { app } = await sys.admin<{ app: { app_id: string; api_key: string } }>(
    'POST',
    `/admin/v1/tenants/${tenantId}/apps`,
    { name: 'till', scopes: ['points_read', 'points_write', 'cashback_read', 'cashback_write', 'card_read'] },
  );
  const api = apiClient(sys.url, { appId: app.app_id, apiKey: app.api_key });
  const run = randomBytes(3).toString('hex');
  const { card: points } = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenantId}/cards`, {
    name: 'Coffee points',
    reward_system: 'points',
    points_ratio: 1,
    referrer_bonus: 100,
    referee_bonus: 50,
  });
  const { card: cashback } = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenantId}/cards`, {
    name: 'Coffee cashback',
    reward_system: 'cashback',
    cashback_config: { cashback_percentage: 10, cashback_min_amount: 0, cashback_max_amount: null },
  });
  const { reward } = await sys.admin<{ reward: { id: number } }>(
    'POST',
    `/admin/v1/tenants/${tenantId}/cards/${points.id}/rewards`,
    { name: 'Free coffee', points_cost: 100 },
  );
  const managerEmail = `maria.${run}@cornercoffee.example`;
  await sys.admin('POST', `/admin/v1/tenants/${tenantId}/staff`, {
    email: managerEmail,
    name: 'Maria Lopez',
    role: 'manager',
  });
  const members: ConsoleTenant['members'] = [];
  const claims: number[] = [];
  for (let i = 0; i < memberCount; i++) {
    const name = ['Ana Silva', 'Bruno Costa', 'Carla Dias', 'Dora Reis'][i % 4]!;
    const email = `${name.split(' ')[0]!.toLowerCase()}.${run}@example.com`;
    const earn = await api('POST', '/api/v1/loyalty/points/earn', {
      body: { card_id: points.id, email, member_name: name, purchase_amount: 150 },
    });
    expect(earn.status, JSON.stringify(earn.body)).toBe(200);
    const memberId = earn.body.data!.member_id as number;
    const cb = await api('POST', '/api/v1/cashback/cashback/earn', {
      body: { card_id: cashback.id, member_id: memberId, purchase_amount: 100 },
    });
    expect(cb.status, JSON.stringify(cb.body)).toBe(200);
    members.push({ id: memberId, email, name });
    const otp = await api('POST', '/api/v1/loyalty/claims/request-otp', {
      body: { member_email: email, card_id: points.id, reward_id: reward.id },
    });
    expect(otp.status, JSON.stringify(otp.body)).toBe(200);
    const created = await api('POST', '/api/v1/loyalty/claims', {
      body: {
        member_email: email,
        card_id: points.id,
        reward_id: reward.id,
        verification_code: otp.body.data!.otp_code,
        member_note: `Oat milk for ${name}`,
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    claims.push((created.body.data!.claim_request as { id: number }).id);
  }
  return {
    tenantId,
    api,
    pointsCard: points.id,
    cashbackCard: cashback.id,
    reward: reward.id,
    managerEmail,
    members,
    claims,
  };
}
