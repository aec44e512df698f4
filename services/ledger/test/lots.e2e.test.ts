import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningLedger } from '@loyalty/ledger';
import type { RunningClaims } from '@loyalty/claims';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import {
  cashbackCard,
  email,
  lotsAgree,
  notificationsSettled,
  pointsCard,
  reward,
  signedIn,
  type Api,
} from './support.ts';

/**
 * Lots, holds and quotes end to end through the gateway, with time moved by the
 * injectable clock: pending credits becoming spendable, expiry with its journal rows and warning
 * mail (read from the SMTP sink), refunds inside the return window, holds of claim requests
 * (blocking a redemption, released by rejection and expiry, captured by approval), quotes that
 * change nothing, and a card without the new settings answering exactly as before.
 */
let sys: TestSystem;
let api: Api;
let tenantId: number;
const PTS = '/api/v1/loyalty/points';
const CB = '/api/v1/cashback/cashback';
const CLAIMS = '/api/v1/loyalty/claims';
const DAY = 86_400_000;
const HOUR = 3_600_000;
type Body = Record<string, unknown>;

beforeAll(async () => {
  sys = await startTestSystem({
    services: ['identity', 'ledger', 'claims'],
    // The tests sweep when they mean to.
    env: { LOT_SWEEP_INTERVAL_MS: String(HOUR), CLAIM_SWEEP_INTERVAL_MS: String(HOUR) },
  });
  const t = await sys.tenant();
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
});
afterAll(async () => {
  if (sys) await notificationsSettled(sys);
  await sys?.stop();
});

const ledger = () => sys.services.ledger as RunningLedger;
const claimsService = () => sys.services.claims as RunningClaims;

async function ok(r: Promise<{ status: number; body: { data?: Body } }>): Promise<Body> {
  const res = await r;
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data!;
}

const earnPoints = (card: number, memberId: number, amount: number, extra: Body = {}) =>
  ok(api('POST', `${PTS}/earn`, { body: { card_id: card, member_id: memberId, purchase_amount: amount, ...extra } }));
const pointsBalance = (card: number, memberId: number) =>
  ok(api('GET', `${PTS}/balance?card_id=${card}&member_id=${memberId}`));
const history = async (card: number, memberId: number) =>
  (await ok(api('GET', `${PTS}/history?card_id=${card}&member_id=${memberId}&limit=100`))).transactions as {
    points: number;
    event: string;
  }[];
const redeem = (card: number, rewardId: number, token: string) =>
  api('POST', `${PTS}/redeem`, { token, body: { card_id: card, reward_id: rewardId } });

/** A new member token after the clock moved past the old one's hour. */
async function signInAgain(m: { email: string }): Promise<string> {
  sys.clock.advance(61_000); // past the one-code-a-minute cooldown
  const code = await ok(api('POST', '/api/v1/auth/member/request-otp', { body: { email: m.email } }));
  const v = await ok(api('POST', '/api/v1/auth/member/verify-otp', { body: { email: m.email, code: code.otp_code } }));
  return v.member_token as string;
}

/** A claim request of the member for the reward (the code from the sandbox answer). */
async function claim(card: number, rewardId: number, m: { email: string }) {
  sys.clock.advance(61_000); // past the member's one-code-a-minute cooldown
  const code = await ok(
    api('POST', `${CLAIMS}/request-otp`, { body: { member_email: m.email, card_id: card, reward_id: rewardId } }),
  );
  return api('POST', CLAIMS, {
    body: { member_email: m.email, card_id: card, reward_id: rewardId, verification_code: code.otp_code },
  });
}

/** Row counts of every table an operation could write. */
async function footprint(): Promise<Record<string, number>> {
  const tables = [
    'ledger.accounts',
    'ledger.journal',
    'ledger.lots',
    'ledger.holds',
    'ledger.hold_lots',
    'ledger.outbox',
    'ledger.idempotency_keys',
    'identity.members',
  ];
  const counts: Record<string, number> = {};
  for (const t of tables)
    counts[t] = (await sys.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t}`)).rows[0]!.n;
  const sums = await sys.db.query<{ s: string }>(
    `SELECT (SELECT COALESCE(sum(balance + pending + held), 0) FROM ledger.accounts)::text || '/' ||
            (SELECT COALESCE(sum(remaining), 0) FROM ledger.lots)::text AS s`,
  );
  counts[sums.rows[0]!.s] = 0;
  return counts;
}

describe('a card without the lifecycle settings', () => {
  it('answers exactly as before: no pending, expiry or hold fields in an earn, zeros in a balance', async () => {
    const card = await pointsCard(sys, tenantId);
    const m = await signedIn(api);
    const earned = await earnPoints(card, m.id, 42);
    expect(Object.keys(earned).sort()).toEqual(
      [
        'transaction_id',
        'points_earned',
        'new_balance',
        'member_id',
        'card_id',
        'is_new_member',
        'notification_sent',
        'reference',
        'earned_at',
      ].sort(),
    );
    expect(earned).toMatchObject({ points_earned: 42, new_balance: 42 });
    expect(await pointsBalance(card, m.id)).toMatchObject({
      points_balance: 42,
      pending_points: 0,
      held_points: 0,
      next_expiries: [],
    });
    const { rows } = await sys.db.query('SELECT pending, expires_at FROM ledger.lots WHERE card_id = $1', [card]);
    expect(rows).toEqual([{ pending: false, expires_at: null }]);
    await lotsAgree(sys, card);
  });

  it('shows the settings on the card and refuses values out of range', async () => {
    const card = await pointsCard(sys, tenantId, { expiry_days: 365, pending_days: 30, expiry_warning_days: 10 });
    const { card: record } = await sys.admin<{ card: Body }>('GET', `/admin/v1/tenants/${tenantId}/cards/${card}`);
    expect(record).toMatchObject({ expiry_days: 365, pending_days: 30, expiry_warning_days: 10 });
    const plain = await pointsCard(sys, tenantId);
    const { card: defaults } = await sys.admin<{ card: Body }>('GET', `/admin/v1/tenants/${tenantId}/cards/${plain}`);
    expect(defaults).toMatchObject({ expiry_days: null, pending_days: 0, expiry_warning_days: 14 });
    for (const bad of [{ expiry_days: 0 }, { pending_days: -1 }, { expiry_warning_days: 1.5 }, { expiry_days: '30' }]) {
      const r = await fetch(`${sys.url}/admin/v1/tenants/${tenantId}/cards/${card}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${sys.env.OPERATOR_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(bad),
      });
      const body = (await r.json()) as { error: { code: string; fields: { field: string }[] } };
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(body.error.fields.map((f) => f.field)).toEqual(Object.keys(bad));
    }
  });
});

describe('pending credits (the return window)', () => {
  it('keeps a purchase pending for pending_days, then makes it spendable', async () => {
    const card = await pointsCard(sys, tenantId, { pending_days: 14 });
    const coffee = await reward(sys, tenantId, card, 30);
    const m = await signedIn(api);
    const earned = await earnPoints(card, m.id, 50);
    expect(earned).toMatchObject({ points_earned: 50, new_balance: 0, pending_points: 50 });
    expect(Date.parse(earned.available_at as string) - Date.parse(earned.earned_at as string)).toBe(14 * DAY);
    expect(earned.expires_at).toBeUndefined();
    expect(await pointsBalance(card, m.id)).toMatchObject({ points_balance: 0, pending_points: 50 });
    const early = await redeem(card, coffee, m.token);
    expect(early.status).toBe(422);
    expect(early.body.error).toMatchObject({ code: 'insufficient_points', points_balance: 0 });

    sys.clock.advance(14 * DAY + 1_000);
    // No sweep: the read settles the account itself.
    expect(await pointsBalance(card, m.id)).toMatchObject({ points_balance: 50, pending_points: 0 });
    const token = await signInAgain(m);
    expect(await ok(redeem(card, coffee, token))).toMatchObject({ points_redeemed: 30, new_balance: 20 });
    await lotsAgree(sys, card, m.id);
  });

  it('lets a redemption spend a credit whose pending period is over, though nothing settled the account yet', async () => {
    const card = await pointsCard(sys, tenantId, { pending_days: 3 });
    const mug = await reward(sys, tenantId, card, 40);
    const m = await signedIn(api);
    await earnPoints(card, m.id, 40);
    sys.clock.advance(3 * DAY);
    const token = await signInAgain(m);
    expect(await ok(redeem(card, mug, token))).toMatchObject({ points_redeemed: 40, new_balance: 0 });
    await lotsAgree(sys, card, m.id);
  });

  it("takes a refund inside the return window from the purchase's pending lot first", async () => {
    const card = await pointsCard(sys, tenantId, { pending_days: 14 });
    const m = await signedIn(api);
    await earnPoints(card, m.id, 100, { reference: `old-${m.id}` });
    sys.clock.advance(15 * DAY);
    await earnPoints(card, m.id, 60, { reference: `new-${m.id}` });
    expect(await pointsBalance(card, m.id)).toMatchObject({ points_balance: 100, pending_points: 60 });

    const refunded = await ok(
      api('POST', `${PTS}/refund`, {
        body: { card_id: card, member_id: m.id, refund_amount: 60, reference: `new-${m.id}` },
      }),
    );
    expect(refunded).toMatchObject({
      points_deducted: 60,
      pending_points_deducted: 60,
      previous_balance: 100,
      new_balance: 100,
      balance_warning: null,
    });
    expect(await pointsBalance(card, m.id)).toMatchObject({ points_balance: 100, pending_points: 0 });
    // The old purchase's refund takes from its own (spendable) lot: no pending part.
    const old = await ok(
      api('POST', `${PTS}/refund`, {
        body: { card_id: card, member_id: m.id, refund_amount: 30, reference: `old-${m.id}` },
      }),
    );
    expect(old).toMatchObject({ points_deducted: 30, previous_balance: 100, new_balance: 70 });
    expect(old.pending_points_deducted).toBeUndefined();
    await lotsAgree(sys, card, m.id);
  });
});

describe('expiry', () => {
  it('expires what is left of each lot at its time, soonest-expiring lots spent first, with journal rows', async () => {
    const card = await pointsCard(sys, tenantId, { expiry_days: 30, expiry_warning_days: 0 });
    const pin = await reward(sys, tenantId, card, 25);
    const m = await signedIn(api);
    const first = await earnPoints(card, m.id, 40);
    expect(Date.parse(first.expires_at as string) - Date.parse(first.earned_at as string)).toBe(30 * DAY);
    sys.clock.advance(10 * DAY);
    const token = await signInAgain(m);
    const second = await earnPoints(card, m.id, 70);
    expect(await pointsBalance(card, m.id)).toMatchObject({
      points_balance: 110,
      next_expiries: [
        { points: 40, expires_at: first.expires_at },
        { points: 70, expires_at: second.expires_at },
      ],
    });
    // The redemption takes the lot that expires first.
    await ok(redeem(card, pin, token));
    expect((await pointsBalance(card, m.id)).next_expiries).toEqual([
      { points: 15, expires_at: first.expires_at },
      { points: 70, expires_at: second.expires_at },
    ]);

    sys.clock.advance(20 * DAY + 1_000); // the first lot's time
    expect((await ledger().hooks.sweepLots()).expired).toBeGreaterThanOrEqual(1);
    expect(await pointsBalance(card, m.id)).toMatchObject({
      points_balance: 70,
      next_expiries: [{ points: 70, expires_at: second.expires_at }],
    });
    expect((await history(card, m.id))[0]).toMatchObject({ points: -15, event: 'points_expired' });
    const { rows } = await sys.db.query<{ payload: { data: Body } }>(
      `SELECT payload FROM ledger.outbox WHERE payload->>'type' = 'ledger.points_expired' AND (payload->'data'->>'member_id')::bigint = $1`,
      [m.id],
    );
    expect(rows.map((r) => r.payload.data)).toEqual([
      expect.objectContaining({ card_id: card, points: 15, lots: 1, previous_balance: 85, new_balance: 70 }),
    ]);
    // Sweeping again changes nothing: each lot expires once.
    await ledger().hooks.sweepLots();
    expect((await history(card, m.id)).filter((t) => t.event === 'points_expired')).toHaveLength(1);
    await lotsAgree(sys, card, m.id);
  });

  it('never lets expired points be spent, even before the sweep ran', async () => {
    const card = await pointsCard(sys, tenantId, { expiry_days: 5, expiry_warning_days: 0 });
    const mug = await reward(sys, tenantId, card, 10);
    const m = await signedIn(api);
    await earnPoints(card, m.id, 10);
    sys.clock.advance(5 * DAY);
    const r = await redeem(card, mug, await signInAgain(m));
    expect(r.status).toBe(422);
    expect(r.body.error).toMatchObject({ code: 'insufficient_points', points_balance: 0 });
    expect((await history(card, m.id))[0]).toMatchObject({ points: -10, event: 'points_expired' });
    await lotsAgree(sys, card, m.id);
  });

  it("mails the member once per lot, expiry_warning_days before, the day told in the card's time zone", async () => {
    // UTC+14: the expiry's day there is not its UTC day for most of the UTC day.
    const card = await pointsCard(sys, tenantId, {
      expiry_days: 30,
      expiry_warning_days: 7,
      time_zone: 'Pacific/Kiritimati',
    });
    const m = await signedIn(api);
    const earned = await earnPoints(card, m.id, 120);
    sys.clock.advance(22 * DAY); // 8 days before: too early
    expect((await ledger().hooks.sweepLots()).warned).toBe(0);
    sys.clock.advance(DAY + 1_000);
    expect((await ledger().hooks.sweepLots()).warned).toBeGreaterThanOrEqual(1);
    const { rows } = await sys.db.query<{ type: string; data: Record<string, unknown> }>(
      `SELECT payload ->> 'type' AS type, payload -> 'data' AS data FROM ledger.outbox
        WHERE (subject LIKE '%.points_expiring' OR subject LIKE '%.points_earned') AND payload -> 'data' ->> 'card_id' = $1
        ORDER BY created_at`,
      [String(card)],
    );
    // Both events the member's mail tells days of carry the card's zone.
    expect(rows.map((r) => [r.type, r.data.time_zone])).toEqual([
      ['ledger.points_earned', 'Pacific/Kiritimati'],
      ['ledger.points_expiring', 'Pacific/Kiritimati'],
    ]);
    // The day of the expiry in the card's zone, as an English mail writes a day (Intl, the tenant's default locale).
    const day = new Intl.DateTimeFormat('en', { dateStyle: 'long', timeZone: 'Pacific/Kiritimati' }).format(
      new Date(earned.expires_at as string),
    );
    const mail = await sys.mail.waitFor(m.email, (x) => x.subject.includes('expire on'));
    expect(mail.subject).toBe(`120 points expire on ${day}`);
    expect(mail.text).toContain(`120 of your points expire on ${day}`);
    await ledger().hooks.sweepLots();
    await new Promise((r) => setTimeout(r, 300));
    expect(sys.mail.messages.filter((x) => x.to.includes(m.email) && x.subject.includes('expire on'))).toHaveLength(1);
  });

  it('applies changed settings to credits made after the change only', async () => {
    const card = await pointsCard(sys, tenantId);
    const m = await signedIn(api);
    await earnPoints(card, m.id, 10);
    await sys.admin('POST', `/admin/v1/tenants/${tenantId}/cards/${card}`, { expiry_days: 2 });
    const later = await earnPoints(card, m.id, 20);
    expect((await pointsBalance(card, m.id)).next_expiries).toEqual([{ points: 20, expires_at: later.expires_at }]);
    sys.clock.advance(2 * DAY + 1_000);
    expect(await pointsBalance(card, m.id)).toMatchObject({ points_balance: 10, next_expiries: [] });
    await lotsAgree(sys, card, m.id);
  });

  it('expires cashback too, in currency units', async () => {
    const card = await cashbackCard(sys, tenantId, { cashback_min_amount: 0 }, { expiry_days: 10, pending_days: 2 });
    const m = await signedIn(api);
    const earned = await ok(
      api('POST', `${CB}/earn`, { body: { card_id: card, member_id: m.id, purchase_amount: 50 } }),
    );
    expect(earned).toMatchObject({ cashback_earned: 2.5, new_balance: 0, pending_cashback: 2.5 });
    sys.clock.advance(2 * DAY + 1_000);
    expect(await ok(api('GET', `${CB}/balance?card_id=${card}&member_id=${m.id}`))).toMatchObject({
      cashback_balance: 2.5,
      pending_cashback: 0,
      held_cashback: 0,
      next_expiries: [{ amount: 2.5, expires_at: earned.expires_at }],
    });
    sys.clock.advance(10 * DAY);
    await ledger().hooks.sweepLots();
    const h = await ok(api('GET', `${CB}/history?card_id=${card}&member_id=${m.id}`));
    expect((h.transactions as Body[])[0]).toMatchObject({
      amount: -2.5,
      event: 'cashback_expired',
      type: 'redemption',
    });
    await lotsAgree(sys, card, m.id);
  });
});

describe('holds of claim requests', () => {
  it('holds the reward cost at creation: a redemption cannot take it; rejection gives it back', async () => {
    const card = await pointsCard(sys, tenantId);
    const prize = await reward(sys, tenantId, card, 80);
    const coffee = await reward(sys, tenantId, card, 50);
    const m = await signedIn(api);
    await earnPoints(card, m.id, 100);
    const created = await claim(card, prize, m);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = (created.body.data!.claim_request as { id: number }).id;
    expect(await pointsBalance(card, m.id)).toMatchObject({ points_balance: 20, held_points: 80 });
    const blocked = await redeem(card, coffee, m.token);
    expect(blocked.status).toBe(422);
    expect(blocked.body.error).toMatchObject({ code: 'insufficient_points', points_balance: 20 });
    await lotsAgree(sys, card, m.id);

    await ok(api('POST', `${CLAIMS}/${id}/reject`, { body: {} }));
    expect(await pointsBalance(card, m.id)).toMatchObject({ points_balance: 100, held_points: 0 });
    expect(await ok(redeem(card, coffee, m.token))).toMatchObject({ new_balance: 50 });
    await lotsAgree(sys, card, m.id);
  });

  it('captures the hold on approval: one reward_claimed row, the spendable balance unchanged', async () => {
    const card = await pointsCard(sys, tenantId);
    const prize = await reward(sys, tenantId, card, 80);
    const m = await signedIn(api);
    await earnPoints(card, m.id, 100);
    const id = ((await ok(claim(card, prize, m))).claim_request as { id: number }).id;
    const approved = await ok(api('POST', `${CLAIMS}/${id}/approve`, { body: {} }));
    expect(approved.claim_request).toMatchObject({ status: 'approved', points_deducted: 80 });
    expect(await pointsBalance(card, m.id)).toMatchObject({ points_balance: 20, held_points: 0 });
    expect((await history(card, m.id)).map((t) => [t.event, t.points])).toEqual([
      ['reward_claimed', -80],
      ['staff_added_points', 100],
    ]);
    await lotsAgree(sys, card, m.id);
  });

  it('releases the hold when the claim request expires', async () => {
    const card = await pointsCard(sys, tenantId, { claim_lifetime_hours: 2 });
    const prize = await reward(sys, tenantId, card, 60);
    const m = await signedIn(api);
    await earnPoints(card, m.id, 60);
    await ok(claim(card, prize, m));
    expect(await pointsBalance(card, m.id)).toMatchObject({ points_balance: 0, held_points: 60 });
    sys.clock.advance(2 * HOUR + 1_000);
    expect((await claimsService().hooks.sweep()).expired).toBeGreaterThanOrEqual(1);
    expect(await pointsBalance(card, m.id)).toMatchObject({ points_balance: 60, held_points: 0 });
    await lotsAgree(sys, card, m.id);
  });

  it('refuses a claim request the spendable balance cannot cover: 422 and no request', async () => {
    const card = await pointsCard(sys, tenantId, { pending_days: 7 });
    const prize = await reward(sys, tenantId, card, 60);
    const m = await signedIn(api);
    await earnPoints(card, m.id, 100); // all pending
    const r = await claim(card, prize, m);
    expect(r.status).toBe(422);
    expect(r.body.error).toMatchObject({ code: 'insufficient_points', points_balance: 0, points_required: 60 });
    const list = await ok(api('GET', `${CLAIMS}?card_id=${card}`));
    expect(list.claim_requests).toEqual([]);
    await lotsAgree(sys, card, m.id);
  });

  it('keeps held points from expiring; a release after their expiry expires them', async () => {
    const card = await pointsCard(sys, tenantId, { expiry_days: 1, expiry_warning_days: 0, claim_lifetime_hours: 48 });
    const prize = await reward(sys, tenantId, card, 30);
    const m = await signedIn(api);
    await earnPoints(card, m.id, 50);
    const id = ((await ok(claim(card, prize, m))).claim_request as { id: number }).id;
    sys.clock.advance(DAY + 1_000);
    await ledger().hooks.sweepLots();
    expect(await pointsBalance(card, m.id)).toMatchObject({ points_balance: 0, held_points: 30 });
    await ok(api('POST', `${CLAIMS}/${id}/reject`, { body: {} }));
    expect(await pointsBalance(card, m.id)).toMatchObject({ points_balance: 0, held_points: 0 });
    expect((await history(card, m.id)).filter((t) => t.event === 'points_expired').map((t) => t.points)).toEqual([
      -30, -20,
    ]);
    await lotsAgree(sys, card, m.id);
  });
});

describe('quotes', () => {
  it('answer what an earn, a redemption and a refund would do, and change nothing', async () => {
    const card = await pointsCard(sys, tenantId, { pending_days: 10, expiry_days: 100 });
    const lamp = await reward(sys, tenantId, card, 500);
    const m = await signedIn(api);
    await earnPoints(card, m.id, 200, { reference: `q-${m.id}` });
    const before = await footprint();

    const quoteEarn = await ok(
      api('POST', `${PTS}/quote`, {
        body: { operation: 'earn', card_id: card, member_id: m.id, purchase_amount: 80.9 },
      }),
    );
    expect(quoteEarn).toMatchObject({
      operation: 'earn',
      member_id: m.id,
      is_new_member: false,
      would_succeed: true,
      points: 80,
      points_balance: 0,
      new_balance: 0,
      pending_points: 200,
      new_pending_points: 280,
      warnings: [],
    });
    const newcomer = await ok(
      api('POST', `${PTS}/quote`, {
        body: { operation: 'earn', card_id: card, email: email('quote'), purchase_amount: 10 },
      }),
    );
    expect(newcomer).toMatchObject({ member_id: null, is_new_member: true, points: 10, new_pending_points: 10 });
    const quoteRedeem = await ok(
      api('POST', `${PTS}/quote`, { body: { operation: 'redeem', card_id: card, member_id: m.id, reward_id: lamp } }),
    );
    expect(quoteRedeem).toMatchObject({
      would_succeed: false,
      points: 500,
      new_balance: 0,
      reward_id: lamp,
      warnings: [{ code: 'insufficient_points' }],
    });
    const quoteRefund = await ok(
      api('POST', `${PTS}/quote`, {
        body: { operation: 'refund', card_id: card, member_id: m.id, refund_amount: 50, reference: `q-${m.id}` },
      }),
    );
    expect(quoteRefund).toMatchObject({
      would_succeed: true,
      points: 50,
      points_balance: 0,
      new_balance: 0,
      pending_points: 200,
      new_pending_points: 150,
      warnings: [],
    });
    expect(await footprint()).toEqual(before);

    // The operations then do what their quotes said.
    const earned = await earnPoints(card, m.id, 80.9);
    expect(earned).toMatchObject({ points_earned: quoteEarn.points, new_balance: quoteEarn.new_balance });
    expect(earned.available_at).toBe(quoteEarn.available_at === null ? undefined : earned.available_at);
    const refunded = await ok(
      api('POST', `${PTS}/refund`, {
        body: { card_id: card, member_id: m.id, refund_amount: 50, reference: `q-${m.id}` },
      }),
    );
    expect(refunded).toMatchObject({ points_deducted: 50, pending_points_deducted: 50, new_balance: 0 });
    await lotsAgree(sys, card, m.id);
  });

  it('quote cashback in currency units and refuse an unknown member or card like the operation', async () => {
    const card = await cashbackCard(sys, tenantId, { cashback_min_amount: 0 });
    const m = await signedIn(api);
    await ok(api('POST', `${CB}/earn`, { body: { card_id: card, member_id: m.id, purchase_amount: 100 } }));
    const q = await ok(
      api('POST', `${CB}/quote`, { body: { operation: 'redeem', card_id: card, member_id: m.id, amount: 3.5 } }),
    );
    expect(q).toMatchObject({
      would_succeed: true,
      amount: 3.5,
      cashback_balance: 5,
      new_balance: 1.5,
      currency: 'EUR',
    });
    const unknown = await api('POST', `${CB}/quote`, {
      body: { operation: 'refund', card_id: card, member_id: 99_999_999, refund_amount: 1 },
    });
    expect([unknown.status, unknown.body.error?.code]).toEqual([404, 'member_not_found']);
    const wrong = await api('POST', `${PTS}/quote`, {
      body: { operation: 'earn', card_id: card, member_id: m.id, purchase_amount: 1 },
    });
    expect([wrong.status, wrong.body.error?.code]).toEqual([422, 'wrong_card_type']);
    const bad = await api('POST', `${PTS}/quote`, { body: { operation: 'transfer', card_id: card, member_id: m.id } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'validation_error' });
  });

  it('needs only the read scope and no member token', async () => {
    const reader = await sys.tenant({ scopes: ['points_read'] });
    const readOnly = apiClient(sys.url, reader);
    const card = await pointsCard(sys, reader.tenantId);
    const r = await readOnly('POST', `${PTS}/quote`, {
      body: { operation: 'earn', card_id: card, email: email('reader'), purchase_amount: 5 },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const cashback = await readOnly('POST', `${CB}/quote`, {
      body: { operation: 'earn', card_id: card, email: email('reader'), purchase_amount: 5 },
    });
    expect(cashback.status).toBe(403);
    expect(cashback.body.error).toMatchObject({ code: 'insufficient_scope', required_scope: 'cashback_read' });
  });
});
