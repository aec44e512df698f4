import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningLedger } from '../src/service.ts';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { lotsAgree, notificationsSettled, pointsCard, reward, signedIn, type Api } from './support.ts';

/**
 * Points transfers through the gateway: off by default, lots keep their dates, idempotent by
 * reference, refused above the balance or the monthly cap without changing anything, authorised
 * by the sender's token or a code of purpose transfer, and never overspent when redemptions race.
 */
let sys: TestSystem;
let api: Api;
let tenantId: number;
const DAY = 86_400_000;
// Lots a few hours apart expire a few hours apart, while the members' tokens (an hour) stay valid.
const HOURS = 10 * 60_000;

beforeAll(async () => {
  sys = await startTestSystem({
    services: ['identity', 'ledger'],
    env: { LOT_SWEEP_INTERVAL_MS: '3600000', DATABASE_POOL_SIZE: '10' },
  });
  const t = await sys.tenant();
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
});
afterAll(async () => {
  if (sys) await notificationsSettled(sys);
  await sys?.stop();
});

async function earn(card: number, member: number, points: number) {
  const r = await api('POST', '/api/v1/loyalty/points/earn', {
    body: { card_id: card, member_id: member, purchase_amount: points },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

const balanceOf = async (card: number, member: number) =>
  (await api('GET', `/api/v1/loyalty/points/balance?card_id=${card}&member_id=${member}`)).body.data!;

/** Everything a refused request could have changed, to compare before and after. */
async function snapshot(card: number) {
  const { rows } = await sys.db.query(
    `SELECT (SELECT count(*) FROM ledger.journal WHERE card_id = $1)::int AS journal,
            (SELECT count(*) FROM ledger.lots WHERE card_id = $1)::int AS lots,
            (SELECT COALESCE(sum(remaining), 0) FROM ledger.lots WHERE card_id = $1)::text AS remaining,
            (SELECT count(*) FROM ledger.transfers WHERE card_id = $1)::int AS transfers,
            (SELECT json_agg(json_build_object('m', member_id, 'b', balance) ORDER BY member_id) FROM ledger.accounts WHERE card_id = $1) AS accounts`,
    [card],
  );
  return rows[0];
}

describe('points transfers', () => {
  it('are off by default and refused without changing anything', async () => {
    const card = await pointsCard(sys, tenantId);
    const a = await signedIn(api);
    const b = await signedIn(api);
    await earn(card, a.id, 100);
    const before = await snapshot(card);
    const r = await api('POST', '/api/v1/loyalty/points/transfer', {
      token: a.token,
      body: { card_id: card, from_member_id: a.id, to_member_id: b.id, points: 10, reference: 'off-1' },
    });
    expect(r.status).toBe(422);
    expect(r.body.error!.code).toBe('transfers_disabled');
    expect(await snapshot(card)).toEqual(before);
  });

  it('moves lots soonest-expiring first with their dates, shows in both histories, replays by reference', async () => {
    const card = await pointsCard(sys, tenantId, {
      expiry_days: 30,
      expiry_warning_days: 0,
      transfers_enabled: true,
      transfer_monthly_cap: 1000,
    });
    const a = await signedIn(api);
    const b = await signedIn(api);
    for (const points of [100, 50, 80]) {
      await earn(card, a.id, points);
      sys.clock.advance(HOURS);
    }
    await earn(card, b.id, 10);
    const { rows: source } = await sys.db.query<{ expires_at: Date }>(
      'SELECT expires_at FROM ledger.lots WHERE card_id = $1 AND member_id = $2 ORDER BY expires_at',
      [card, a.id],
    );
    const body = { card_id: card, from_member_id: a.id, to_member_id: b.id, points: 120, reference: 'gift-1' };
    const r = await api('POST', '/api/v1/loyalty/points/transfer', { token: a.token, body });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ points: 120, from_balance: 110, to_balance: 130, reference: 'gift-1' });
    // The first lot whole, then 20 of the second, each keeping the date it had.
    expect(r.body.data!.lots).toEqual([
      expect.objectContaining({ points: 100, expires_at: source[0]!.expires_at.toISOString() }),
      expect.objectContaining({ points: 20, expires_at: source[1]!.expires_at.toISOString() }),
    ]);
    const { rows: received } = await sys.db.query<{
      remaining: number;
      expires_at: Date;
      source_lot_id: number | null;
    }>(
      'SELECT remaining, expires_at, source_lot_id FROM ledger.lots WHERE card_id = $1 AND member_id = $2 AND source_lot_id IS NOT NULL ORDER BY expires_at',
      [card, b.id],
    );
    expect(received.map((l) => [Number(l.remaining), l.expires_at.toISOString()])).toEqual([
      [100, source[0]!.expires_at.toISOString()],
      [20, source[1]!.expires_at.toISOString()],
    ]);
    expect((await balanceOf(card, b.id)).next_expiries).toEqual([
      { points: 100, expires_at: source[0]!.expires_at.toISOString() },
      { points: 20, expires_at: source[1]!.expires_at.toISOString() },
      expect.objectContaining({ points: 10 }),
    ]);
    const historyA = await api('GET', `/api/v1/loyalty/points/history?card_id=${card}&member_id=${a.id}`);
    const historyB = await api('GET', `/api/v1/loyalty/points/history?card_id=${card}&member_id=${b.id}`);
    expect((historyA.body.data!.transactions as { event: string; points: number }[])[0]).toMatchObject({
      event: 'points_transferred_out',
      points: -120,
    });
    expect((historyB.body.data!.transactions as { event: string; points: number }[])[0]).toMatchObject({
      event: 'points_transferred_in',
      points: 120,
    });

    // The same reference again answers the first transfer and moves nothing more.
    const before = await snapshot(card);
    const again = await api('POST', '/api/v1/loyalty/points/transfer', { token: a.token, body });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(r.body.data);
    expect(await snapshot(card)).toEqual(before);
    // With other parameters it is a conflict.
    const other = await api('POST', '/api/v1/loyalty/points/transfer', {
      token: a.token,
      body: { ...body, points: 5 },
    });
    expect(other.status).toBe(409);
    expect(other.body.error!.code).toBe('duplicate_reference');

    // The moved points expire for the receiver when they would have for the sender.
    // Now 30 minutes after the first earn: move to 12 minutes past the first two lots' expiries.
    sys.clock.advance(30 * DAY - 18 * 60_000);
    await (sys.services.ledger as RunningLedger).hooks.sweepLots();
    expect((await balanceOf(card, b.id)).points_balance).toBe(10);
    expect((await balanceOf(card, a.id)).points_balance).toBe(80);
    await lotsAgree(sys, card);
    const { rows: events } = await sys.db.query(
      `SELECT payload FROM ledger.outbox WHERE subject LIKE '%.events.ledger.points_transferred' AND payload -> 'data' ->> 'reference' = 'gift-1'`,
    );
    expect(events).toHaveLength(1);
  });

  it('refuses above the balance and above the monthly cap, changing nothing', async () => {
    const card = await pointsCard(sys, tenantId, { transfers_enabled: true, transfer_monthly_cap: 100 });
    const a = await signedIn(api);
    const b = await signedIn(api);
    await earn(card, a.id, 300);
    const send = (points: number, reference: string) =>
      api('POST', '/api/v1/loyalty/points/transfer', {
        token: a.token,
        body: { card_id: card, from_member_id: a.id, to_member_id: b.id, points, reference },
      });
    let before = await snapshot(card);
    const over = await send(301, 'over-balance');
    expect(over.status).toBe(422);
    expect(over.body.error!.code).toBe('insufficient_points');
    expect(await snapshot(card)).toEqual(before);

    expect((await send(60, 'cap-1')).status).toBe(200);
    before = await snapshot(card);
    const capped = await send(41, 'cap-2');
    expect(capped.status).toBe(422);
    expect(capped.body.error).toMatchObject({
      code: 'transfer_limit_exceeded',
      monthly_cap: 100,
      transferred_this_month: 60,
    });
    expect(await snapshot(card)).toEqual(before);
    expect((await send(40, 'cap-3')).status).toBe(200);
    // A new calendar month starts a new allowance.
    sys.clock.advance(32 * DAY);
    expect((await send(100, 'cap-4')).status).toBe(200);
    await lotsAgree(sys, card);
  });

  it('needs the sender: their token, or a code of purpose transfer', async () => {
    const card = await pointsCard(sys, tenantId, { transfers_enabled: true });
    const a = await signedIn(api);
    const b = await signedIn(api);
    await earn(card, a.id, 100);
    const body = { card_id: card, from_member_id: a.id, to_member_id: b.id, points: 10, reference: 'auth-1' };
    const before = await snapshot(card);
    const foreign = await api('POST', '/api/v1/loyalty/points/transfer', { token: b.token, body });
    expect(foreign.status).toBe(403);
    expect(foreign.body.error!.code).toBe('member_token_mismatch');
    const none = await api('POST', '/api/v1/loyalty/points/transfer', { body });
    expect(none.status).toBe(401);
    expect(none.body.error!.code).toBe('member_token_required');
    const otp = await api('POST', '/api/v1/loyalty/points/transfer/request-otp', {
      body: { card_id: card, from_member_id: a.id },
    });
    expect(otp.status, JSON.stringify(otp.body)).toBe(200);
    const code = otp.body.data!.otp_code as string;
    const wrong = await api('POST', '/api/v1/loyalty/points/transfer', {
      body: { ...body, verification_code: code === '000000' ? '000001' : '000000' },
    });
    expect(wrong.status).toBe(422);
    expect(wrong.body.error!.code).toBe('invalid_verification_code');
    expect(await snapshot(card)).toEqual(before);
    const right = await api('POST', '/api/v1/loyalty/points/transfer', { body: { ...body, verification_code: code } });
    expect(right.status, JSON.stringify(right.body)).toBe(200);
    // A retry with the same code and reference answers the same transfer (the code was spent once).
    const retry = await api('POST', '/api/v1/loyalty/points/transfer', { body: { ...body, verification_code: code } });
    expect(retry.status).toBe(200);
    expect(retry.body.data).toEqual(right.body.data);
    expect((await balanceOf(card, a.id)).points_balance).toBe(90);
    // Unknown receiver: 404, nothing moved.
    const ghost = await api('POST', '/api/v1/loyalty/points/transfer', {
      token: a.token,
      body: { ...body, to_member_id: 999_999_999, reference: 'auth-2' },
    });
    expect(ghost.status).toBe(404);
    expect((await balanceOf(card, a.id)).points_balance).toBe(90);
  });

  it('never spends more than the balance when redemptions and transfers race', async () => {
    const card = await pointsCard(sys, tenantId, { transfers_enabled: true, expiry_days: 60, expiry_warning_days: 0 });
    const prize = await reward(sys, tenantId, card, 50);
    const a = await signedIn(api);
    const b = await signedIn(api);
    for (const points of [200, 150, 150]) {
      await earn(card, a.id, points);
      sys.clock.advance(HOURS);
    }
    const redeems = Array.from({ length: 8 }, () =>
      api('POST', '/api/v1/loyalty/points/redeem', { token: a.token, body: { card_id: card, reward_id: prize } }),
    );
    const transfers = Array.from({ length: 8 }, (_, i) =>
      api('POST', '/api/v1/loyalty/points/transfer', {
        token: a.token,
        body: { card_id: card, from_member_id: a.id, to_member_id: b.id, points: 50, reference: `race-${i}` },
      }),
    );
    // Opposite transfers at the same time cannot deadlock (accounts are locked in member order).
    const back = Array.from({ length: 4 }, (_, i) =>
      api('POST', '/api/v1/loyalty/points/transfer', {
        token: b.token,
        body: { card_id: card, from_member_id: b.id, to_member_id: a.id, points: 1, reference: `back-${i}` },
      }),
    );
    const results = await Promise.all([...redeems, ...transfers, ...back]);
    for (const r of results) expect([200, 422], JSON.stringify(r.body)).toContain(r.status);
    const redeemed = results.slice(0, 8).filter((r) => r.status === 200).length;
    const sent = results.slice(8, 16).filter((r) => r.status === 200).length;
    const returned = results.slice(16).filter((r) => r.status === 200).length;
    // 500 points cover ten moves of 50; all sixteen asked, so exactly ten succeeded.
    expect(redeemed + sent).toBe(10);
    const [ba, bb] = [await balanceOf(card, a.id), await balanceOf(card, b.id)];
    expect(ba.points_balance).toBe(returned);
    expect(bb.points_balance).toBe(sent * 50 - returned);
    await lotsAgree(sys, card);
  });
});
