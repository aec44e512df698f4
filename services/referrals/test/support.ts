import { expect } from 'vitest';
import { apiClient, type TestSystem } from '../../../test/support/system.ts';

export type Api = ReturnType<typeof apiClient>;

/** Wait for asynchronous work (a consumer, the sweeper) to show; never a fixed sleep. */
export async function eventually<T>(read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let n = 0;
/** A new member of the app's tenant (registered through the API); returns id and raw email. */
export async function member(api: Api, name?: string): Promise<{ id: number; name: string; email: string }> {
  n += 1;
  const p = {
    name: name ?? `Member ${n}`,
    email: `ref${n}.${process.pid}.${Date.now()}@example.com`,
    phone: `+1666${String(1_000_000 + n * 7919 + (process.pid % 1000)).slice(-7)}`,
  };
  const r = await api('POST', '/api/v1/auth/member/register', { body: p });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return { id: (r.body.data!.member as { id: number }).id, name: p.name, email: p.email };
}

/** A card of the tenant, through the ledger's operator API. */
export async function card(
  sys: TestSystem,
  tenantId: number,
  opts: {
    reward_system?: 'points' | 'cashback';
    referrer_bonus?: number;
    referee_bonus?: number;
    referral_bonus_on_first_purchase?: boolean;
  } = {},
): Promise<number> {
  const body =
    (opts.reward_system ?? 'points') === 'points'
      ? {
          name: 'Points card',
          reward_system: 'points',
          points_ratio: 1,
          referrer_bonus: opts.referrer_bonus ?? 100,
          referee_bonus: opts.referee_bonus ?? 50,
          referral_bonus_on_first_purchase: opts.referral_bonus_on_first_purchase ?? false,
        }
      : { name: 'Cashback card', reward_system: 'cashback', cashback_config: { cashback_percentage: 5 } };
  const { card: created } = await sys.admin<{ card: { id: number } }>(
    'POST',
    `/admin/v1/tenants/${tenantId}/cards`,
    body,
  );
  return created.id;
}

export async function balance(api: Api, cardId: number, memberId: number): Promise<number> {
  const r = await api('GET', `/api/v1/loyalty/points/balance?card_id=${cardId}&member_id=${memberId}`);
  if (r.status === 404 && (r.body.error as { code: string }).code === 'member_not_found') return 0;
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data!.points_balance as number;
}

export async function history(
  api: Api,
  cardId: number,
  memberId: number,
): Promise<{ points: number; event: string }[]> {
  const r = await api('GET', `/api/v1/loyalty/points/history?card_id=${cardId}&member_id=${memberId}&limit=100`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data!.transactions as { points: number; event: string }[];
}

export async function earn(api: Api, cardId: number, memberId: number, purchaseAmount: number): Promise<number> {
  const r = await api('POST', '/api/v1/loyalty/points/earn', {
    body: { card_id: cardId, member_id: memberId, purchase_amount: purchaseAmount },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data!.points_earned as number;
}

export async function codeOf(api: Api, cardId: number, memberId: number): Promise<string> {
  const r = await api('GET', `/api/v1/loyalty/cards/${cardId}/members/${memberId}/referral-code`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data!.referral_code as string;
}

export function apply(
  api: Api,
  body: { referral_code: string; card_id: number; referee_member_id: number },
  key?: string,
) {
  return api('POST', '/api/v1/loyalty/referrals/apply', { body, headers: key ? { 'idempotency-key': key } : {} });
}
