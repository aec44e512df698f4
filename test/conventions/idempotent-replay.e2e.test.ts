import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * A retry with the same Idempotency-Key answers the first response byte for byte, with
 * `Idempotent-Replayed: true`; the first answer has no such header.
 */
let sys: TestSystem;
let creds: { tenantId: number; appId: string; apiKey: string };
let pointsCard: number;
let cashbackCard: number;

async function post(
  path: string,
  body: unknown,
  key: string,
): Promise<{ status: number; text: string; replayed: string | null }> {
  const res = await fetch(`${sys.url}${path}`, {
    method: 'POST',
    headers: {
      'x-app-id': creds.appId,
      'x-api-key': creds.apiKey,
      'content-type': 'application/json',
      'idempotency-key': key,
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text(), replayed: res.headers.get('idempotent-replayed') };
}

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger', 'referrals'] });
  creds = await sys.tenant();
  const points = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${creds.tenantId}/cards`, {
    name: 'Points',
    reward_system: 'points',
    points_ratio: 1,
    referrer_bonus: 10,
    referee_bonus: 5,
  });
  pointsCard = points.card.id;
  const cashback = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${creds.tenantId}/cards`, {
    name: 'Cashback',
    reward_system: 'cashback',
    cashback_config: { cashback_percentage: 5 },
  });
  cashbackCard = cashback.card.id;
});
afterAll(async () => {
  await sys?.stop();
});

describe('Idempotency-Key replays', () => {
  it.each([
    [
      'points earn',
      '/api/v1/loyalty/points/earn',
      () => ({ card_id: pointsCard, email: 'replay-p@example.com', purchase_amount: 12.5, metadata: { z: 1, a: 2 } }),
    ],
    [
      'cashback earn',
      '/api/v1/cashback/cashback/earn',
      () => ({
        card_id: cashbackCard,
        email: 'replay-c@example.com',
        purchase_amount: 40,
        metadata: { zeta: 'last', alpha: 'first' },
      }),
    ],
    [
      'cashback refund',
      '/api/v1/cashback/cashback/refund',
      () => ({ card_id: cashbackCard, email: 'replay-c@example.com', refund_amount: 10 }),
    ],
    [
      'register',
      '/api/v1/auth/member/register',
      () => ({ name: 'Replay Me', email: 'replay-r@example.com', phone: '+15550009999' }),
    ],
  ])('%s: the replay is the first response byte for byte, marked Idempotent-Replayed', async (_name, path, body) => {
    const key = `replay-${path}`;
    const first = await post(path, body(), key);
    expect(first.status, first.text).toBe(200);
    expect(first.replayed).toBeNull();
    const again = await post(path, body(), key);
    expect(again.status).toBe(200);
    expect(again.replayed).toBe('true');
    expect(again.text).toBe(first.text);
  });

  it('a replay with a top-level message (referral apply) keeps it, byte for byte', async () => {
    const register = async (email: string, phone: string) =>
      JSON.parse((await post('/api/v1/auth/member/register', { name: email, email, phone }, `reg-${email}`)).text) as {
        data: { member: { id: number } };
      };
    const referrer = await register('referrer-replay@example.com', '+15550008881');
    const referee = await register('referee-replay@example.com', '+15550008882');
    const code = await fetch(
      `${sys.url}/api/v1/loyalty/cards/${pointsCard}/members/${referrer.data.member.id}/referral-code`,
      {
        headers: { 'x-app-id': creds.appId, 'x-api-key': creds.apiKey },
      },
    ).then((r) => r.json() as Promise<{ data: { referral_code: string } }>);
    const body = {
      referral_code: code.data.referral_code,
      card_id: pointsCard,
      referee_member_id: referee.data.member.id,
    };
    const first = await post('/api/v1/loyalty/referrals/apply', body, 'apply-once');
    expect(first.status, first.text).toBe(200);
    expect(JSON.parse(first.text)).toMatchObject({ success: true, message: expect.any(String) });
    const again = await post('/api/v1/loyalty/referrals/apply', body, 'apply-once');
    expect(again.replayed).toBe('true');
    expect(again.text).toBe(first.text);
  });
});
