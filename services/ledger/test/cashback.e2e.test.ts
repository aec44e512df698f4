import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { cashbackCard, email, journalOf, pointsCard, signedIn, storedAndJournal, type Api } from './support.ts';

/**
 * The cashback operations end to end through the gateway: identity, the ledger and the gateway over
 * real PostgreSQL and NATS. Card: 5%, minimum purchase 10.00, cap 50.00 per purchase.
 */
let sys: TestSystem;
let api: Api;
let other: Api;
let tenantId: number;
let otherTenantId: number;
let card: number;
const CB = '/api/v1/cashback/cashback';
const MINUTE = 60_000;

beforeAll(async () => {
  sys = await startTestSystem({
    services: ['identity', 'ledger'],
    env: { PIN_MAX_ATTEMPTS: '5', PIN_LOCK_MINUTES: '15' },
  });
  const t = await sys.tenant();
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
  const o = await sys.tenant();
  otherTenantId = o.tenantId;
  other = apiClient(sys.url, o);
  card = await cashbackCard(sys, tenantId);
});
afterAll(async () => sys?.stop());

const earn = (body: Record<string, unknown>, headers: Record<string, string> = {}, client = api) =>
  client('POST', `${CB}/earn`, { body: { card_id: card, ...body }, headers });
const refund = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  api('POST', `${CB}/refund`, { body: { card_id: card, ...body }, headers });
const balanceOf = async (memberId: number, cardId = card) => {
  const r = await api('GET', `${CB}/balance?card_id=${cardId}&member_id=${memberId}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data!.cashback_balance as number;
};
async function newMember(purchase: number, extra: Record<string, unknown> = {}): Promise<number> {
  const r = await earn({ email: email('cb'), member_name: 'Cashback Member', purchase_amount: purchase, ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data!.member_id as number;
}

describe('earn', () => {
  it('creates an unknown member, computes cashback half-up to the cent and answers every field', async () => {
    const address = email('new');
    const r = await earn({
      email: address,
      member_name: 'Ada Lovelace',
      purchase_amount: 19.99,
      reference: 'order-a1',
      metadata: { till: 3 },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      success: true,
      data: {
        transaction_id: expect.any(Number),
        purchase_amount: 19.99,
        cashback_percentage: 5,
        cashback_earned: 1, // 0.9995 -> 1.00
        new_balance: 1,
        member_id: expect.any(Number),
        card_id: card,
        is_new_member: true,
        reference: 'order-a1',
        earned_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      },
    });
    const memberId = r.body.data!.member_id as number;
    const check = await api('POST', '/api/v1/auth/member/check', { body: { email: address } });
    expect(check.body.data!.exists).toBe(true);

    // the same member by id, then by email: not new; 19.89 -> 0.9945 -> 0.99
    const again = await earn({ member_id: memberId, purchase_amount: 19.89 });
    expect(again.body.data).toMatchObject({
      member_id: memberId,
      is_new_member: false,
      cashback_earned: 0.99,
      new_balance: 1.99,
      reference: null,
    });
    const byEmail = await earn({ email: address.toUpperCase(), purchase_amount: 0.2 + 19.9 }); // 20.10 (binary noise ignored) -> 1.005 -> 1.01
    expect(byEmail.body.data).toMatchObject({
      member_id: memberId,
      is_new_member: false,
      purchase_amount: 20.1,
      cashback_earned: 1.01,
      new_balance: 3,
    });
  });

  it('records the cashback_earned event with the transaction, both balances in currency units and the currency', async () => {
    const memberId = await newMember(20); // 1.00
    const r = await earn({ member_id: memberId, purchase_amount: 25.1, reference: `evt-${memberId}` }); // 1.255 -> 1.26
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const { rows } = await sys.db.query<{
      subject: string;
      payload: { type: string; tenant_id: number; data: Record<string, unknown> };
    }>(`SELECT subject, payload FROM ledger.outbox WHERE payload->'data'->>'transaction_id' = $1`, [
      String(r.body.data!.transaction_id),
    ]);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.subject).toMatch(/\.events\.ledger\.cashback_earned$/);
    expect(rows[0]!.payload).toMatchObject({ type: 'ledger.cashback_earned', tenant_id: tenantId });
    expect(rows[0]!.payload.data).toEqual({
      member_id: memberId,
      card_id: card,
      transaction_id: r.body.data!.transaction_id,
      amount: 1.26,
      purchase_amount: 25.1,
      cashback_percentage: 5,
      previous_balance: 1,
      new_balance: 2.26,
      currency: 'EUR',
      reference: `evt-${memberId}`,
      event: 'cashback_earned',
      // The credit's lot: spendable at once, never expiring (the card has no lifecycle settings).
      pending: false,
      available_at: r.body.data!.earned_at,
      expires_at: null,
    });
  });

  it('uses a changed card setting from the next earn on (the cached card is forgotten)', async () => {
    const own = await cashbackCard(sys, tenantId, { cashback_min_amount: 0, cashback_max_amount: null });
    const first = await earn({ card_id: own, email: email('cfg'), purchase_amount: 100 });
    expect(first.body.data).toMatchObject({ cashback_percentage: 5, cashback_earned: 5 });
    await sys.admin('POST', `/admin/v1/tenants/${tenantId}/cards/${own}`, {
      cashback_config: { cashback_percentage: 7.5 },
    });
    const second = await earn({ card_id: own, member_id: first.body.data!.member_id, purchase_amount: 100 });
    expect(second.body.data).toMatchObject({ cashback_percentage: 7.5, cashback_earned: 7.5, new_balance: 12.5 });
  });

  it('creates a member by phone', async () => {
    const phone = `+1888${String(Date.now()).slice(-7)}`;
    const r = await earn({ phone, member_name: 'Phone Only', purchase_amount: 40 });
    expect(r.body.data).toMatchObject({ is_new_member: true, cashback_earned: 2, new_balance: 2 });
    const again = await earn({ phone, purchase_amount: 40 });
    expect(again.body.data).toMatchObject({ member_id: r.body.data!.member_id, is_new_member: false, new_balance: 4 });
  });

  it('earns nothing below the minimum purchase and at most the maximum', async () => {
    const memberId = await newMember(9.99);
    expect(await balanceOf(memberId)).toBe(0);
    const big = await earn({ member_id: memberId, purchase_amount: 5000 });
    expect(big.body.data).toMatchObject({ cashback_earned: 50, new_balance: 50 }); // 250.00 capped at 50.00
    const exact = await earn({ member_id: memberId, purchase_amount: 10 });
    expect(exact.body.data).toMatchObject({ cashback_earned: 0.5, new_balance: 50.5 });
  });

  it('refuses a reference already used for an earn on the card, naming the original transaction', async () => {
    const first = await earn({ email: email('ref'), purchase_amount: 100, reference: 'order-dup' });
    expect(first.status).toBe(200);
    const memberId = first.body.data!.member_id as number;
    for (const body of [{ member_id: memberId }, { email: email('ref2') }]) {
      const dup = await earn({ ...body, purchase_amount: 50, reference: 'order-dup' });
      expect(dup.status).toBe(409);
      expect(dup.body.error).toMatchObject({
        code: 'duplicate_reference',
        original_transaction_id: first.body.data!.transaction_id,
      });
    }
    expect(await balanceOf(memberId)).toBe(5);
    // the same reference on another card is another purchase
    const second = await cashbackCard(sys, tenantId);
    const elsewhere = await api('POST', `${CB}/earn`, {
      body: { card_id: second, member_id: memberId, purchase_amount: 100, reference: 'order-dup' },
    });
    expect(elsewhere.status).toBe(200);
  });

  it('answers as not found for an unknown or foreign member and a foreign card; refuses a points card', async () => {
    const mine = await newMember(20);
    const unknown = await earn({ member_id: 987654, purchase_amount: 20 });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'member_not_found' });
    const foreignMember = await earn({ member_id: mine, purchase_amount: 20 }, {}, other);
    expect(foreignMember.status).toBe(404);
    expect(foreignMember.body.error).toMatchObject({ code: 'card_not_found' });
    const otherCard = await cashbackCard(sys, otherTenantId);
    const crossMember = await other('POST', `${CB}/earn`, {
      body: { card_id: otherCard, member_id: mine, purchase_amount: 20 },
    });
    expect(crossMember.status).toBe(404);
    expect(crossMember.body.error).toMatchObject({ code: 'member_not_found' });
    const points = await pointsCard(sys, tenantId);
    const wrong = await api('POST', `${CB}/earn`, { body: { card_id: points, member_id: mine, purchase_amount: 20 } });
    expect(wrong.status).toBe(422);
    expect(wrong.body.error).toMatchObject({ code: 'wrong_card_type' });
  });

  it('validates the body, naming the fields', async () => {
    const noMember = await earn({ purchase_amount: 10 });
    expect(noMember.status).toBe(400);
    expect(noMember.body.error).toMatchObject({
      code: 'validation_error',
      fields: [expect.objectContaining({ field: 'member_id' })],
    });
    const badAmount = await earn({ email: email(), purchase_amount: 1.234 });
    expect(badAmount.status).toBe(400);
    expect((badAmount.body.error!.fields as { field: string }[]).map((f) => f.field)).toContain('purchase_amount');
    const negative = await earn({ email: email(), purchase_amount: -5 });
    expect(negative.status).toBe(400);
  });

  it('needs the cashback_write scope', async () => {
    const t = await sys.tenant({ scopes: ['cashback_read'] });
    const readOnly = apiClient(sys.url, t);
    const r = await readOnly('POST', `${CB}/earn`, { body: { card_id: card, email: email(), purchase_amount: 10 } });
    expect(r.status).toBe(403);
    expect(r.body.error).toMatchObject({ code: 'insufficient_scope' });
  });
});

describe('idempotency', () => {
  it('replays the stored response for a retry and refuses the key with other parameters', async () => {
    const address = email('idem');
    const key = `earn-${Date.now()}`;
    const first = await earn({ email: address, purchase_amount: 100 }, { 'idempotency-key': key });
    const retry = await earn({ email: address, purchase_amount: 100 }, { 'idempotency-key': key });
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual(first.body);
    expect(await balanceOf(first.body.data!.member_id as number)).toBe(5);
    const mismatch = await earn({ email: address, purchase_amount: 200 }, { 'idempotency-key': key });
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.error).toMatchObject({ code: 'idempotency_key_reused' });
    expect(await balanceOf(first.body.data!.member_id as number)).toBe(5);
  });

  it('applies concurrent retries under one key once', async () => {
    const memberId = await newMember(10);
    const key = `par-${Date.now()}`;
    const replies = await Promise.all(
      Array.from({ length: 10 }, () => earn({ member_id: memberId, purchase_amount: 200 }, { 'idempotency-key': key })),
    );
    const ok = replies.filter((r) => r.status === 200);
    expect(ok.length).toBeGreaterThan(0);
    for (const r of replies)
      if (r.status !== 200) expect(r.body.error).toMatchObject({ code: 'idempotency_in_progress' });
    expect(new Set(ok.map((r) => r.body.data!.transaction_id)).size).toBe(1);
    expect(await balanceOf(memberId)).toBe(10.5);
  });
});

describe('redeem', () => {
  it('needs a member token and debits the token member only', async () => {
    const m = await signedIn(api);
    await earn({ member_id: m.id, purchase_amount: 200 }); // 10.00
    const noToken = await api('POST', `${CB}/redeem`, { body: { card_id: card, amount: 1 } });
    expect(noToken.status).toBe(401);
    expect(noToken.body.error).toMatchObject({ code: 'member_token_required' });
    const r = await api('POST', `${CB}/redeem`, {
      body: { card_id: card, amount: 2.5, reference: 'pos-1' },
      token: m.token,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      success: true,
      data: {
        transaction_id: expect.any(Number),
        amount_redeemed: 2.5,
        new_balance: 7.5,
        member_id: m.id,
        card_id: card,
        reference: 'pos-1',
        redeemed_at: expect.any(String),
      },
    });
    const tooMuch = await api('POST', `${CB}/redeem`, { body: { card_id: card, amount: 7.51 }, token: m.token });
    expect(tooMuch.status).toBe(422);
    expect(tooMuch.body.error).toMatchObject({ code: 'insufficient_balance', cashback_balance: 7.5, requested: 7.51 });
    expect(await balanceOf(m.id)).toBe(7.5);
    const all = await api('POST', `${CB}/redeem`, { body: { card_id: card, amount: 7.5 }, token: m.token });
    expect(all.body.data).toMatchObject({ new_balance: 0 });
  });

  it('refuses a points card and a foreign card', async () => {
    const m = await signedIn(api);
    const points = await pointsCard(sys, tenantId);
    const wrong = await api('POST', `${CB}/redeem`, { body: { card_id: points, amount: 1 }, token: m.token });
    expect(wrong.status).toBe(422);
    expect(wrong.body.error).toMatchObject({ code: 'wrong_card_type' });
    const foreign = await cashbackCard(sys, otherTenantId);
    const r = await api('POST', `${CB}/redeem`, { body: { card_id: foreign, amount: 1 }, token: m.token });
    expect(r.status).toBe(404);
    expect(r.body.error).toMatchObject({ code: 'card_not_found' });
  });

  it('never overdraws under 50 parallel redemptions; the balance equals the sum of the journal', async () => {
    const m = await signedIn(api);
    await earn({ member_id: m.id, purchase_amount: 200 }); // 10.00
    const replies = await Promise.all(
      Array.from({ length: 50 }, () =>
        api('POST', `${CB}/redeem`, { body: { card_id: card, amount: 0.3 }, token: m.token }),
      ),
    );
    const ok = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status === 422);
    expect(ok.length).toBe(33); // 33 x 0.30 = 9.90
    expect(refused.length).toBe(17);
    for (const r of refused) expect(r.body.error).toMatchObject({ code: 'insufficient_balance' });
    expect(await balanceOf(m.id)).toBe(0.1);
    const { stored, journal } = await storedAndJournal(sys, card, m.id);
    expect(stored).toBe(10);
    expect(journal).toBe(stored);
  });

  it('replays a redemption retried under its Idempotency-Key', async () => {
    const m = await signedIn(api);
    await earn({ member_id: m.id, purchase_amount: 200 });
    const key = `redeem-${Date.now()}`;
    const send = (amount: number) =>
      api('POST', `${CB}/redeem`, {
        body: { card_id: card, amount },
        token: m.token,
        headers: { 'idempotency-key': key },
      });
    const first = await send(4);
    const retry = await send(4);
    expect(retry.body).toEqual(first.body);
    expect(await balanceOf(m.id)).toBe(6);
    expect((await send(5)).body.error).toMatchObject({ code: 'idempotency_key_reused' });
    // another member using the same key does not get this member's reply
    const n = await signedIn(api);
    await earn({ member_id: n.id, purchase_amount: 200 });
    const theirs = await api('POST', `${CB}/redeem`, {
      body: { card_id: card, amount: 4 },
      token: n.token,
      headers: { 'idempotency-key': key },
    });
    expect(theirs.status).toBe(409);
  });
});

describe('PIN', () => {
  it('asks a member who set a PIN for it on a PIN card and locks after five wrong PINs', async () => {
    const pinCard = await cashbackCard(sys, tenantId, { allows_pin_redemption: true, cashback_min_amount: 0 });
    const m = await signedIn(api);
    await api('POST', `${CB}/earn`, { body: { card_id: pinCard, member_id: m.id, purchase_amount: 400 } }); // 20.00
    const redeem = (body: Record<string, unknown>) =>
      api('POST', `${CB}/redeem`, { body: { card_id: pinCard, amount: 1, ...body }, token: m.token });

    // no PIN set yet: redemption works without one
    expect((await redeem({})).status).toBe(200);

    const noToken = await api('POST', '/api/v1/auth/member/pin', { body: { pin: '1234' } });
    expect(noToken.status).toBe(401);
    const badPin = await api('POST', '/api/v1/auth/member/pin', { body: { pin: '12' }, token: m.token });
    expect(badPin.status).toBe(400);
    const set = await api('POST', '/api/v1/auth/member/pin', { body: { pin: '2468' }, token: m.token });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.data).toEqual({ pin_set: true, updated_at: expect.any(String) });

    const missing = await redeem({});
    expect(missing.status).toBe(401);
    expect(missing.body.error).toMatchObject({ code: 'pin_required' });
    expect((await redeem({ pin: '2468' })).body.data).toMatchObject({ new_balance: 18 });

    for (let i = 1; i <= 4; i++) {
      const wrong = await redeem({ pin: '1111' });
      expect(wrong.status).toBe(401);
      expect(wrong.body.error).toMatchObject({ code: 'invalid_pin', attempts_remaining: 5 - i });
    }
    const fifth = await redeem({ pin: '1111' });
    expect(fifth.status).toBe(423);
    expect(fifth.body.error).toMatchObject({ code: 'pin_locked', locked_until: expect.any(String) });
    const rightButLocked = await redeem({ pin: '2468' });
    expect(rightButLocked.status).toBe(423);
    // changing the PIN is locked too, and a token alone cannot replace it
    expect(
      (await api('POST', '/api/v1/auth/member/pin', { body: { pin: '9999', current_pin: '2468' }, token: m.token }))
        .status,
    ).toBe(423);
    expect(await balanceOf(m.id, pinCard)).toBe(18);

    sys.clock.advance(15 * MINUTE);
    expect((await redeem({ pin: '2468' })).body.data).toMatchObject({ new_balance: 17 });
    // a card without allows_pin_redemption never asks
    await earn({ member_id: m.id, purchase_amount: 100 });
    expect((await api('POST', `${CB}/redeem`, { body: { card_id: card, amount: 1 }, token: m.token })).status).toBe(
      200,
    );
  });

  it('doubles each lock in a row and forgets the escalation only after the right PIN', async () => {
    const pinCard = await cashbackCard(sys, tenantId, { allows_pin_redemption: true, cashback_min_amount: 0 });
    const m = await signedIn(api);
    await api('POST', `${CB}/earn`, { body: { card_id: pinCard, member_id: m.id, purchase_amount: 400 } }); // 20.00
    expect((await api('POST', '/api/v1/auth/member/pin', { body: { pin: '2468' }, token: m.token })).status).toBe(200);
    let token = m.token;
    const redeem = (pin: string) => api('POST', `${CB}/redeem`, { body: { card_id: pinCard, amount: 1, pin }, token });
    /** Sign in again: the clock moves past a member token's 60 minutes here. */
    const signInAgain = async () => {
      const otp = await api('POST', '/api/v1/auth/member/request-otp', { body: { email: m.email } });
      expect(otp.status, JSON.stringify(otp.body)).toBe(200);
      const v = await api('POST', '/api/v1/auth/member/verify-otp', {
        body: { email: m.email, code: otp.body.data!.otp_code },
      });
      expect(v.status, JSON.stringify(v.body)).toBe(200);
      token = v.body.data!.member_token as string;
    };
    /** Five wrong PINs; answers how long (minutes) the lock of the fifth lasts. */
    const lockAfterFiveWrong = async (): Promise<number> => {
      for (let i = 1; i <= 4; i++) expect((await redeem('1111')).body.error).toMatchObject({ code: 'invalid_pin' });
      const fifth = await redeem('1111');
      expect(fifth.status).toBe(423);
      const until = Date.parse((fifth.body.error as { locked_until: string }).locked_until);
      // the clock runs on from real time too: whole minutes are what the test means
      return Math.round((until - sys.clock.now().getTime()) / MINUTE);
    };

    expect(await lockAfterFiveWrong()).toBe(15);
    sys.clock.advance(15 * MINUTE);
    expect(await lockAfterFiveWrong()).toBe(30);
    // 15 minutes into the second lock it still holds, even for the right PIN
    sys.clock.advance(15 * MINUTE);
    expect((await redeem('2468')).status).toBe(423);
    sys.clock.advance(15 * MINUTE);
    expect(await lockAfterFiveWrong()).toBe(60);
    sys.clock.advance(60 * MINUTE);
    await signInAgain();
    expect(await balanceOf(m.id, pinCard)).toBe(20);
    // the right PIN redeems and resets the escalation: the next lock is 15 minutes again
    expect((await redeem('2468')).body.data).toMatchObject({ new_balance: 19 });
    expect(await lockAfterFiveWrong()).toBe(15);
  });

  it('changes a PIN only with the current one', async () => {
    const m = await signedIn(api);
    const pin = (body: Record<string, unknown>) => api('POST', '/api/v1/auth/member/pin', { body, token: m.token });
    expect((await pin({ pin: '123456' })).status).toBe(200);
    const without = await pin({ pin: '654321' });
    expect(without.status).toBe(401);
    expect(without.body.error).toMatchObject({ code: 'pin_required' });
    const wrong = await pin({ pin: '654321', current_pin: '000000' });
    expect(wrong.body.error).toMatchObject({ code: 'invalid_pin' });
    expect((await pin({ pin: '654321', current_pin: '123456' })).status).toBe(200);
    expect((await pin({ pin: '1111', current_pin: '654321' })).status).toBe(200);
  });
});

describe('refund', () => {
  it('deducts from refund_amount, or the explicit amount, capped by what the purchase earned', async () => {
    const memberId = await newMember(200, { reference: 'order-r1' }); // 10.00 on order-r1
    await earn({ member_id: memberId, purchase_amount: 200, reference: 'order-r2' }); // 10.00
    const half = await refund({ member_id: memberId, refund_amount: 100, reference: 'order-r1' });
    expect(half.status, JSON.stringify(half.body)).toBe(200);
    expect(half.body).toEqual({
      success: true,
      data: {
        transaction_id: expect.any(Number),
        cashback_deducted: 5,
        refund_amount: 100,
        previous_balance: 20,
        new_balance: 15,
        currency: 'EUR',
        member_id: memberId,
        card_id: card,
        reference: 'order-r1',
        balance_warning: null,
        refunded_at: expect.any(String),
      },
    });
    // the full purchase refunded again: only the 5.00 left of what order-r1 earned
    const rest = await refund({ member_id: memberId, refund_amount: 200, reference: 'order-r1' });
    expect(rest.body.data).toMatchObject({ cashback_deducted: 5, new_balance: 10, balance_warning: null });
    const nothing = await refund({
      member_id: memberId,
      refund_amount: 200,
      cashback_to_deduct: 3,
      reference: 'order-r1',
    });
    expect(nothing.body.data).toMatchObject({ cashback_deducted: 0, previous_balance: 10, new_balance: 10 });
    // explicit amount without reference
    const explicit = await refund({ member_id: memberId, refund_amount: 10, cashback_to_deduct: 2.25 });
    expect(explicit.body.data).toMatchObject({ cashback_deducted: 2.25, new_balance: 7.75, reference: null });
  });

  it('never makes the balance negative: it deducts what is there and warns', async () => {
    const address = email('warn');
    const memberId = await newMember(100, { email: address }); // 5.00
    const r = await refund({ email: address, refund_amount: 300, cashback_to_deduct: 12 });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      cashback_deducted: 5,
      previous_balance: 5,
      new_balance: 0,
      balance_warning: {
        code: 'insufficient_balance',
        message: expect.any(String),
        requested: 12,
        deducted: 5,
        uncovered: 7,
      },
    });
    expect(await balanceOf(memberId)).toBe(0);
    const again = await refund({ member_id: memberId, refund_amount: 100 });
    expect(again.body.data).toMatchObject({
      cashback_deducted: 0,
      new_balance: 0,
      balance_warning: { requested: 5, deducted: 0, uncovered: 5 },
    });
    const { stored, journal } = await storedAndJournal(sys, card, memberId);
    expect(stored).toBe(0);
    expect(journal).toBe(0);
  });

  it("refuses a reference of another member's purchase or of a purchase on another card, changing nothing", async () => {
    const owner = await newMember(200, { reference: 'order-owner' }); // 10.00
    const memberId = await newMember(400); // 20.00
    const otherCard = await cashbackCard(sys, tenantId, { cashback_min_amount: 0 });
    await earn({ card_id: otherCard, member_id: memberId, purchase_amount: 100, reference: 'order-elsewhere' }); // 5.00
    const before = await journalOf(sys, card, memberId);
    const ownerBefore = await journalOf(sys, card, owner);

    for (const body of [
      { member_id: memberId, refund_amount: 200, reference: 'order-owner' },
      { member_id: memberId, refund_amount: 200, cashback_to_deduct: 4, reference: 'order-owner' },
      { member_id: memberId, refund_amount: 100, reference: 'order-elsewhere' },
    ]) {
      const r = await refund(body, {
        'idempotency-key': `mismatch-${body.reference}-${body.refund_amount}-${memberId}`,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      expect(r.body.error).toMatchObject({ code: 'refund_reference_mismatch', message: expect.any(String) });
    }
    expect(await balanceOf(memberId)).toBe(20);
    expect(await balanceOf(owner)).toBe(10);
    expect(await balanceOf(memberId, otherCard)).toBe(5);
    expect(await journalOf(sys, card, memberId)).toEqual(before);
    expect(await journalOf(sys, card, owner)).toEqual(ownerBefore);
    // the owner's own refund of it still works, on its card
    const own = await refund({ member_id: owner, refund_amount: 200, reference: 'order-owner' });
    expect(own.body.data).toMatchObject({ cashback_deducted: 10, new_balance: 0 });
  });

  it('deducts nothing for an unknown reference unless cashback_to_deduct is given', async () => {
    const memberId = await newMember(400); // 20.00
    const unknown = await refund({ member_id: memberId, refund_amount: 200, reference: 'order-never-earned' });
    expect(unknown.status, JSON.stringify(unknown.body)).toBe(200);
    expect(unknown.body.data).toMatchObject({
      cashback_deducted: 0,
      previous_balance: 20,
      new_balance: 20,
      reference: 'order-never-earned',
      balance_warning: null,
    });
    const explicit = await refund({
      member_id: memberId,
      refund_amount: 200,
      cashback_to_deduct: 3.5,
      reference: 'order-never-earned',
    });
    expect(explicit.body.data).toMatchObject({ cashback_deducted: 3.5, previous_balance: 20, new_balance: 16.5 });
    // without a reference the formula still applies: 5% of 20.00
    const formula = await refund({ member_id: memberId, refund_amount: 20 });
    expect(formula.body.data).toMatchObject({ cashback_deducted: 1, new_balance: 15.5 });
    expect(await journalOf(sys, card, memberId)).toEqual([
      { event: 'cashback_earned', amount: 2000, reference: null },
      { event: 'cashback_refunded', amount: 0, reference: 'order-never-earned' },
      { event: 'cashback_refunded', amount: -350, reference: 'order-never-earned' },
      { event: 'cashback_refunded', amount: -100, reference: null },
    ]);
    expect(await storedAndJournal(sys, card, memberId)).toEqual({ stored: 1550, journal: 1550 });
  });

  it('refuses an unknown member and replays under its Idempotency-Key', async () => {
    const unknown = await refund({ email: email('nobody'), refund_amount: 10 });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'member_not_found' });
    const memberId = await newMember(200);
    const key = `refund-${Date.now()}`;
    const first = await refund({ member_id: memberId, refund_amount: 20 }, { 'idempotency-key': key });
    const retry = await refund({ member_id: memberId, refund_amount: 20 }, { 'idempotency-key': key });
    expect(retry.body).toEqual(first.body);
    expect(await balanceOf(memberId)).toBe(9);
    expect((await refund({ member_id: memberId, refund_amount: 30 }, { 'idempotency-key': key })).status).toBe(409);
  });
});

describe('balance and history', () => {
  it('answers the balance with every field; zero for a member without transactions; not found otherwise', async () => {
    const memberId = await newMember(100);
    const r = await api('GET', `${CB}/balance?card_id=${card}&member_id=${memberId}`);
    expect(r.body).toEqual({
      success: true,
      data: {
        card_id: card,
        member_id: memberId,
        cashback_balance: 5,
        pending_cashback: 0,
        held_cashback: 0,
        next_expiries: [],
        cashback_percentage: 5,
        currency: 'EUR',
        reward_system: 'cashback',
        queried_at: expect.any(String),
      },
    });
    const m = await signedIn(api);
    expect(await balanceOf(m.id)).toBe(0);
    const unknown = await api('GET', `${CB}/balance?card_id=${card}&member_id=999999`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'member_not_found' });
    const foreign = await other('GET', `${CB}/balance?card_id=${card}&member_id=${memberId}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toMatchObject({ code: 'card_not_found' });
    const missingQuery = await api('GET', `${CB}/balance?card_id=${card}`);
    expect(missingQuery.status).toBe(400);
  });

  it('lists transactions newest first with labels, signs and a correct pagination', async () => {
    const m = await signedIn(api);
    await earn({ member_id: m.id, purchase_amount: 100 }); // +5.00
    await api('POST', `${CB}/redeem`, { body: { card_id: card, amount: 1.5 }, token: m.token }); // -1.50
    await refund({ member_id: m.id, refund_amount: 20 }); // -1.00
    for (let i = 0; i < 22; i++) await earn({ member_id: m.id, purchase_amount: 10 }); // +0.50 each
    const page = await api('GET', `${CB}/history?card_id=${card}&member_id=${m.id}`);
    expect(page.status).toBe(200);
    const data = page.body.data as {
      transactions: { id: number; type: string; amount: number; points: number; event: string }[];
      pagination: unknown;
    };
    expect(data.pagination).toEqual({ limit: 20, offset: 0, total: 25, has_more: true });
    expect(data.transactions).toHaveLength(20);
    expect(data.transactions[0]).toEqual({
      id: expect.any(Number),
      type: 'earning',
      amount: 0.5,
      points: 0,
      event: 'cashback_earned',
      created_at: expect.any(String),
    });
    const ids = data.transactions.map((t) => t.id);
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);

    const last = await api('GET', `${CB}/history?card_id=${card}&member_id=${m.id}&limit=5&offset=20`);
    const tail = last.body.data as typeof data;
    expect(tail.pagination).toEqual({ limit: 5, offset: 20, total: 25, has_more: false });
    expect(tail.transactions.map((t) => [t.type, t.amount, t.event])).toEqual([
      ['earning', 0.5, 'cashback_earned'],
      ['earning', 0.5, 'cashback_earned'],
      ['redemption', -1, 'cashback_refunded'],
      ['redemption', -1.5, 'cashback_redeemed'],
      ['earning', 5, 'cashback_earned'],
    ]);
    const tooMany = await api('GET', `${CB}/history?card_id=${card}&member_id=${m.id}&limit=101`);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toMatchObject({
      code: 'validation_error',
      fields: [expect.objectContaining({ field: 'limit' })],
    });
    const max = await api('GET', `${CB}/history?card_id=${card}&member_id=${m.id}&limit=100`);
    expect(max.body.data!.pagination).toEqual({ limit: 100, offset: 0, total: 25, has_more: false });
  });
});

describe('cards', () => {
  it("lists the calling tenant's cashback cards with every field", async () => {
    const t = await sys.tenant();
    const own = apiClient(sys.url, t);
    const id = await cashbackCard(
      sys,
      t.tenantId,
      { cashback_percentage: 2.5, cashback_min_amount: 0, cashback_max_amount: null, allows_pin_redemption: true },
      { unique_identifier: 'coffee-club' },
    );
    await pointsCard(sys, t.tenantId);
    const r = await own('GET', '/api/v1/cashback/cards');
    expect(r.body).toEqual({
      success: true,
      data: {
        cards: [
          {
            id,
            unique_identifier: 'coffee-club',
            name: 'Cashback card',
            description: 'test cashback',
            reward_system: 'cashback',
            currency: 'EUR',
            cashback_config: {
              cashback_percentage: 2.5,
              cashback_min_amount: 0,
              cashback_max_amount: null,
              allows_pin_redemption: true,
            },
          },
        ],
        total: 1,
      },
    });
    const noScope = apiClient(sys.url, await sys.tenant({ scopes: ['cashback_read'] }));
    expect((await noScope('GET', '/api/v1/cashback/cards')).status).toBe(403);
  });
});
