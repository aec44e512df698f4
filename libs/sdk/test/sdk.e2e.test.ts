import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import {
  createLoyaltyClient,
  LoyaltyApiError,
  newIdempotencyKey,
  type LoyaltyClient,
  type LoyaltyErrorCode,
} from '../src/index.ts';

/**
 * The SDK against the real gateway and services: a member's whole points journey, idempotent
 * replays, a typed failure, and a keyed POST that outlives a ledger outage by retrying.
 */
let sys: TestSystem;
let creds: { appId: string; apiKey: string };
let client: LoyaltyClient;
let cardId: number;
let coffeeId: number;
let yachtId: number;

const unique = () => `${process.pid}${Date.now()}${Math.floor(Math.random() * 1e6)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger', 'claims', 'referrals'] });
  const t = await sys.tenant();
  creds = { appId: t.appId, apiKey: t.apiKey };
  client = createLoyaltyClient({ baseUrl: sys.url, ...creds });
  const { card } = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${t.tenantId}/cards`, {
    name: 'Points card',
    reward_system: 'points',
    points_ratio: 1,
  });
  cardId = card.id;
  const reward = async (name: string, cost: number) =>
    (
      await sys.admin<{ reward: { id: number } }>('POST', `/admin/v1/tenants/${t.tenantId}/cards/${cardId}/rewards`, {
        name,
        points_cost: cost,
      })
    ).reward.id;
  coffeeId = await reward('Coffee', 50);
  yachtId = await reward('Yacht', 1_000_000);
});
afterAll(async () => {
  await sys?.stop();
});

/** Register and verify a member through the SDK (a sandbox tenant answers the one-time code). */
async function member(): Promise<{ id: number; token: string }> {
  const tag = unique();
  const email = `sdk${tag}@example.com`;
  const reg = await client.post('/api/v1/auth/member/register', {
    body: { name: 'Ada SDK', email, phone: `+1555${tag.slice(-7)}` },
    idempotencyKey: newIdempotencyKey(),
  });
  expect(reg.data.otp_code).toMatch(/^[0-9]{6}$/);
  const verified = await client.post('/api/v1/auth/member/verify-otp', {
    body: { email, code: reg.data.otp_code ?? '' },
  });
  return { id: reg.data.member.id, token: verified.data.member_token };
}

describe('the SDK against the gateway', () => {
  it('earns once per idempotency key, redeems with the member token, reads balance and history', async () => {
    const m = await member();
    const key = newIdempotencyKey();
    const body = { card_id: cardId, member_id: m.id, purchase_amount: 120.5, reference: `till-${unique()}` };
    const first = await client.post('/api/v1/loyalty/points/earn', { body, idempotencyKey: key });
    expect(first.replayed).toBe(false);
    expect(first.data).toMatchObject({ points_earned: 120, new_balance: 120, member_id: m.id, card_id: cardId });
    const replay = await client.post('/api/v1/loyalty/points/earn', { body, idempotencyKey: key });
    expect(replay.replayed).toBe(true);
    expect(replay.data).toEqual(first.data);
    // The same key with other parameters is refused, as a typed error.
    await expect(
      client.post('/api/v1/loyalty/points/earn', { body: { ...body, purchase_amount: 5 }, idempotencyKey: key }),
    ).rejects.toMatchObject({ status: 409, code: 'idempotency_key_reused' });

    const redeemed = await client.post('/api/v1/loyalty/points/redeem', {
      body: { card_id: cardId, reward_id: coffeeId },
      memberToken: m.token,
      idempotencyKey: newIdempotencyKey(),
    });
    expect(redeemed.data).toMatchObject({ points_redeemed: 50, new_balance: 70 });

    const balance = await client.get('/api/v1/loyalty/points/balance', {
      query: { card_id: cardId, member_id: m.id },
    });
    expect(balance.data.points_balance).toBe(70);
    const history = await client.get('/api/v1/loyalty/points/history', {
      query: { card_id: cardId, member_id: m.id },
    });
    expect(history.data.pagination).toMatchObject({ total: 2, has_more: false });
    expect(history.data.transactions.map((t) => t.points).sort((a, b) => a - b)).toEqual([-50, 120]);
  });

  it('throws a LoyaltyApiError with the catalogue code on an over-redeem', async () => {
    const m = await member();
    await client.post('/api/v1/loyalty/points/earn', {
      body: { card_id: cardId, member_id: m.id, purchase_amount: 10 },
    });
    const failure = await client
      .post('/api/v1/loyalty/points/redeem', {
        body: { card_id: cardId, reward_id: yachtId },
        memberToken: m.token,
      })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(failure).toBeInstanceOf(LoyaltyApiError);
    if (!(failure instanceof LoyaltyApiError)) return;
    expectTypeOf(failure.code).toEqualTypeOf<LoyaltyErrorCode>();
    expect(failure).toMatchObject({ status: 422, code: 'insufficient_points' });
    expect(failure.message).toBe('The points balance is not sufficient.');
    expect(failure.requestId).toEqual(expect.any(String));

    // Types come from the generated schema: an unknown field is a compile error (npm run check).
    // @ts-expect-error purchase_amount is required and `amount` is not a field of points.earn
    const wrong = client.post('/api/v1/loyalty/points/earn', { body: { card_id: cardId, amount: 1 } });
    await expect(wrong).rejects.toMatchObject({ code: 'validation_error' });
  });

  it('retries a keyed POST through a ledger outage and earns once; never repeats a POST without a key', async () => {
    const m = await member();
    const statuses: number[] = [];
    const counting = createLoyaltyClient({
      baseUrl: sys.url,
      ...creds,
      retry: { attempts: 40, baseDelayMs: 50, maxDelayMs: 500 },
      fetch: async (request) => {
        const response = await fetch(request);
        statuses.push(response.status);
        return response;
      },
    });
    await sys.stopService('ledger');
    let restart: Promise<void> | undefined;
    try {
      await expect(
        counting.post('/api/v1/loyalty/points/earn', {
          body: { card_id: cardId, member_id: m.id, purchase_amount: 7 },
        }),
      ).rejects.toMatchObject({ status: 503, code: 'service_unavailable' });
      expect(statuses).toEqual([503]);

      statuses.length = 0;
      restart = sleep(300).then(() => sys.startService('ledger'));
      const [earned] = await Promise.all([
        counting.post('/api/v1/loyalty/points/earn', {
          body: { card_id: cardId, member_id: m.id, purchase_amount: 30 },
          idempotencyKey: newIdempotencyKey(),
        }),
        restart,
      ]);
      expect(statuses[0]).toBe(503);
      expect(statuses.at(-1)).toBe(200);
      expect(earned.data).toMatchObject({ points_earned: 30, new_balance: 30 });
    } finally {
      await (restart ?? sys.startService('ledger'));
    }
    const history = await client.get('/api/v1/loyalty/points/history', {
      query: { card_id: cardId, member_id: m.id },
    });
    expect(history.data.transactions.map((t) => t.points)).toEqual([30]);
  });
});
