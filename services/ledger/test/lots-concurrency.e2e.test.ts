import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ledgerOperations, Subjects } from '@loyalty/contracts';
import { callService } from '@loyalty/runtime';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { connectAs } from '../../../test/support/nats.ts';
import { lotsAgree, notificationsSettled, pointsCard, reward, signedIn, type Api } from './support.ts';

/**
 * Redemptions and claim holds racing for one balance spread over lots that expire at different
 * times: 25 redemptions through the gateway and 25 holds placed as the claims service places them
 * when requests are created (each under its own claim key), all at once, plus a real claim
 * request through the gateway. Never more taken than the balance held; afterwards every amount of
 * the account equals its lots and its journal.
 */
let sys: TestSystem;
let api: Api;
let tenantId: number;
let nc: NatsConnection;
const DAY = 86_400_000;

beforeAll(async () => {
  sys = await startTestSystem({
    services: ['identity', 'ledger', 'claims'],
    env: { LOT_SWEEP_INTERVAL_MS: '3600000', DATABASE_POOL_SIZE: '10' },
  });
  const t = await sys.tenant();
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
  nc = await connectAs('claims', { url: sys.env.NATS_URL });
});
afterAll(async () => {
  await nc?.close();
  if (sys) await notificationsSettled(sys);
  await sys?.stop();
});

it('never spends or holds more than the spendable balance when 50 redemptions and holds race', async () => {
  const card = await pointsCard(sys, tenantId, { expiry_days: 90, expiry_warning_days: 0 });
  const prize = await reward(sys, tenantId, card, 100);
  const m = await signedIn(api);
  // 1,050 points in 7 lots expiring on different days.
  for (const points of [100, 250, 50, 300, 150, 120, 80]) {
    const r = await api('POST', '/api/v1/loyalty/points/earn', {
      body: { card_id: card, member_id: m.id, purchase_amount: points },
    });
    expect(r.status).toBe(200);
    sys.clock.advance(DAY);
  }
  const token = (
    await api('POST', '/api/v1/auth/member/verify-otp', {
      body: {
        email: m.email,
        code: (await api('POST', '/api/v1/auth/member/request-otp', { body: { email: m.email } })).body.data!.otp_code,
      },
    })
  ).body.data!.member_token as string;
  sys.clock.advance(61_000); // the claim code comes after the sign-in code's cooldown
  const code = (
    await api('POST', '/api/v1/loyalty/claims/request-otp', {
      body: { member_email: m.email, card_id: card, reward_id: prize },
    })
  ).body.data!.otp_code as string;

  const subject = new Subjects(sys.env.SUBJECT_ROOT).op('ledger', ledgerOperations.holdPoints.operation);
  const redeems = Array.from({ length: 25 }, () =>
    api('POST', '/api/v1/loyalty/points/redeem', { token, body: { card_id: card, reward_id: prize } }).then(
      (r) => r.status,
    ),
  );
  const holds = Array.from({ length: 25 }, (_, i) =>
    callService(
      nc,
      subject,
      {
        meta: { request_id: `race-${i}`, tenant_id: tenantId, idempotency_key: `race-claim:${i}` },
        data: {
          card_id: card,
          member_id: m.id,
          points: 100,
          expires_at: new Date(sys.clock.now().getTime() + 3 * DAY).toISOString(),
        },
      },
      `race-${i}`,
      10_000,
    ).then((r) => (r.ok ? 200 : r.error.code)),
  );
  const claimRequest = api('POST', '/api/v1/loyalty/claims', {
    body: { member_email: m.email, card_id: card, reward_id: prize, verification_code: code },
  }).then((r) => r.status);
  const redeemed = await Promise.all(redeems);
  const held = await Promise.all(holds);
  const claimed = await claimRequest;

  const redemptions = redeemed.filter((s) => s === 200).length;
  const placed = held.filter((s) => s === 200).length + (claimed === 200 ? 1 : 0);
  // Every refusal is the business one, never an error.
  expect(
    redeemed.filter((s) => s !== 200).every((s) => s === 422),
    JSON.stringify(redeemed),
  ).toBe(true);
  expect(
    held.filter((s) => s !== 200).every((s) => s === 'insufficient_points'),
    JSON.stringify(held),
  ).toBe(true);
  expect([200, 422]).toContain(claimed);
  // 1,050 points cover ten rewards of 100; all ten are taken by someone.
  expect(redemptions + placed).toBe(10);
  const balance = await api('GET', `/api/v1/loyalty/points/balance?card_id=${card}&member_id=${m.id}`);
  expect(balance.body.data).toMatchObject({ points_balance: 50, held_points: placed * 100, pending_points: 0 });
  await lotsAgree(sys, card, m.id);
  // The lots that expire first were taken first: only the newest lot has anything left.
  const { rows } = await sys.db.query<{ remaining: string }>(
    'SELECT remaining::text FROM ledger.lots WHERE card_id = $1 AND member_id = $2 ORDER BY expires_at',
    [card, m.id],
  );
  expect(rows.map((r) => Number(r.remaining))).toEqual([0, 0, 0, 0, 0, 0, 50]);
});
