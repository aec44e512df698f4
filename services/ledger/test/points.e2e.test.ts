import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Subjects } from '@loyalty/contracts';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { checkResponse } from '../../../test/support/contract.ts';
import { connectAs } from '../../../test/support/nats.ts';
import {
  cashbackCard,
  email,
  journalOf,
  notificationsSettled,
  pointsCard,
  reward,
  signedIn,
  storedAndJournal,
  type Api,
} from './support.ts';

/**
 * The points operations end to end through the gateway, the points_earned mail through identity's
 * event consumer and the SMTP sink. The ledger's operations for the claims and referrals services
 * are tested on the ledger alone (ledger.service.test.ts).
 */
let sys: TestSystem;
let api: Api;
let other: Api;
let tenantId: number;
let otherTenantId: number;
let card: number;
let coffee: number;
let nc: NatsConnection;
let subjects: Subjects;
const PTS = '/api/v1/loyalty/points';

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger'] });
  const t = await sys.tenant();
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
  const o = await sys.tenant();
  otherTenantId = o.tenantId;
  other = apiClient(sys.url, o);
  card = await pointsCard(sys, tenantId);
  coffee = await reward(sys, tenantId, card, 50, { name: 'Coffee' });
  nc = await connectAs('admin', { url: sys.env.NATS_URL });
  subjects = new Subjects(sys.env.SUBJECT_ROOT);
});
afterAll(async () => {
  await nc?.close();
  if (sys) await notificationsSettled(sys);
  await sys?.stop();
});

const earn = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  api('POST', `${PTS}/earn`, { body: { card_id: card, ...body }, headers });
const refund = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  api('POST', `${PTS}/refund`, { body: { card_id: card, ...body }, headers });
const balanceOf = async (memberId: number, cardId = card) => {
  const r = await api('GET', `${PTS}/balance?card_id=${cardId}&member_id=${memberId}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data!.points_balance as number;
};
const phoneMember = async (purchase: number, extra: Record<string, unknown> = {}) => {
  const r = await earn({
    phone: `+1999${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`,
    purchase_amount: purchase,
    ...extra,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data!.member_id as number;
};

describe('earn', () => {
  it('awards floor(purchase x ratio), creates the member, and mails them', async () => {
    const address = email('pts');
    const r = await earn({ email: address, member_name: 'Grace Hopper', purchase_amount: 19.99, reference: 'till-1' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      success: true,
      data: {
        transaction_id: expect.any(Number),
        points_earned: 19,
        new_balance: 19,
        member_id: expect.any(Number),
        card_id: card,
        is_new_member: true,
        notification_sent: 'points_earned',
        reference: 'till-1',
        earned_at: expect.any(String),
      },
    });
    const mail = await sys.mail.waitFor(address, (m) => m.subject.includes('19 points'));
    expect(mail.text).toContain('Grace Hopper');
    expect(mail.text).toContain('Your balance is now 19 points');

    const memberId = r.body.data!.member_id as number;
    const again = await earn({ member_id: memberId, purchase_amount: 0.99 });
    expect(again.body.data).toMatchObject({ points_earned: 0, new_balance: 19, is_new_member: false });
  });

  it('computes exactly with a fractional ratio', async () => {
    const tenth = await pointsCard(sys, tenantId, { points_ratio: 0.1 });
    const r = await api('POST', `${PTS}/earn`, {
      body: { card_id: tenth, phone: '+15550001111', purchase_amount: 109.99 },
    });
    expect(r.body.data).toMatchObject({ points_earned: 10, notification_sent: null }); // no email: no mail
    const r2 = await api('POST', `${PTS}/earn`, {
      body: { card_id: tenth, phone: '+15550001111', purchase_amount: 0.3 + 99.7 },
    });
    expect(r2.body.data).toMatchObject({ points_earned: 10, new_balance: 20 });
    // A member created by phone only has no email: null, never "".
    const check = await api('POST', '/api/v1/auth/member/check', { body: { phone: '+15550001111' } });
    expect(check.body.data).toMatchObject({ exists: true, member: { email: null, phone: expect.any(String) } });
  });

  it('publishes the points_earned event to JetStream through the outbox', async () => {
    const r = await earn({ email: email('evt'), purchase_amount: 42, reference: 'evt-1' });
    const jsm = await nc.jetstreamManager();
    const deadline = Date.now() + 5_000;
    let data: Record<string, unknown> | undefined;
    while (Date.now() < deadline) {
      const msg = await jsm.streams
        .getMessage(subjects.streamName(), { last_by_subj: subjects.event('ledger', 'points_earned') })
        .catch(() => undefined);
      const event = msg?.json<{ type: string; tenant_id: number; data: Record<string, unknown> }>();
      if (event && event.data.transaction_id === r.body.data!.transaction_id) {
        expect(event.type).toBe('ledger.points_earned');
        expect(event.tenant_id).toBe(tenantId);
        data = event.data;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(data).toMatchObject({
      member_id: r.body.data!.member_id,
      card_id: card,
      points: 42,
      previous_balance: 0,
      new_balance: 42,
      reference: 'evt-1',
      event: 'staff_added_points',
    });
  });

  it('sends no second mail when the event is delivered again', async () => {
    const address = email('redeliver');
    const r = await earn({ email: address, purchase_amount: 7 });
    await sys.mail.waitFor(address);
    const { rows } = await sys.db.query<{ subject: string; payload: { id: string } }>(
      `SELECT subject, payload FROM ledger.outbox WHERE payload->'data'->>'transaction_id' = $1`,
      [String(r.body.data!.transaction_id)],
    );
    expect(rows).toHaveLength(1);
    // the same event again, under another message id so JetStream does not drop it as a duplicate
    await nc
      .jetstream()
      .publish(rows[0]!.subject, JSON.stringify(rows[0]!.payload), { msgID: `again-${rows[0]!.payload.id}` });
    // a later event for someone else is mailed after the redelivered one has been handled
    const later = email('later');
    await earn({ email: later, purchase_amount: 8 });
    await sys.mail.waitFor(later);
    await notificationsSettled(sys);
    expect(sys.mail.messages.filter((m) => m.to.includes(address))).toHaveLength(1);
  });

  it('refuses a duplicate reference, a cashback card, a foreign card and an unknown member', async () => {
    const first = await earn({ email: email('dup'), purchase_amount: 10, reference: 'pts-dup' });
    const dup = await earn({ member_id: first.body.data!.member_id, purchase_amount: 10, reference: 'pts-dup' });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toMatchObject({
      code: 'duplicate_reference',
      original_transaction_id: first.body.data!.transaction_id,
    });
    const cb = await cashbackCard(sys, tenantId);
    const wrong = await api('POST', `${PTS}/earn`, { body: { card_id: cb, email: email(), purchase_amount: 10 } });
    expect(wrong.status).toBe(422);
    expect(wrong.body.error).toMatchObject({ code: 'wrong_card_type' });
    const foreign = await other('POST', `${PTS}/earn`, {
      body: { card_id: card, email: email(), purchase_amount: 10 },
    });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toMatchObject({ code: 'card_not_found' });
    const unknown = await earn({ member_id: 424242, purchase_amount: 10 });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'member_not_found' });
  });

  it('replays under an Idempotency-Key and refuses it with other parameters', async () => {
    const phone = '+15550002222';
    const key = `pts-${Date.now()}`;
    const first = await earn({ phone, purchase_amount: 30 }, { 'idempotency-key': key });
    const retry = await earn({ phone, purchase_amount: 30 }, { 'idempotency-key': key });
    expect(retry.body).toEqual(first.body);
    expect(first.body.data!.is_new_member).toBe(true);
    expect(await balanceOf(first.body.data!.member_id as number)).toBe(30);
    const mismatch = await earn({ phone, purchase_amount: 31 }, { 'idempotency-key': key });
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.error).toMatchObject({ code: 'idempotency_key_reused' });
  });
});

describe('redeem', () => {
  it('redeems an active reward of the card for the token member', async () => {
    const m = await signedIn(api);
    await earn({ member_id: m.id, purchase_amount: 120 });
    const noToken = await api('POST', `${PTS}/redeem`, { body: { card_id: card, reward_id: coffee } });
    expect(noToken.status).toBe(401);
    const r = await api('POST', `${PTS}/redeem`, {
      body: { card_id: card, reward_id: coffee, reference: 'pos-9' },
      token: m.token,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      success: true,
      data: {
        transaction_id: expect.any(Number),
        reward_id: coffee,
        reward_name: 'Coffee',
        points_redeemed: 50,
        new_balance: 70,
        member_id: m.id,
        card_id: card,
        reference: 'pos-9',
        redeemed_at: expect.any(String),
      },
    });
    await api('POST', `${PTS}/redeem`, { body: { card_id: card, reward_id: coffee }, token: m.token });
    const short = await api('POST', `${PTS}/redeem`, { body: { card_id: card, reward_id: coffee }, token: m.token });
    expect(short.status).toBe(422);
    expect(short.body.error).toMatchObject({ code: 'insufficient_points', points_balance: 20, points_required: 50 });
    expect(await balanceOf(m.id)).toBe(20);
  });

  it('refuses an inactive reward, a reward of another card and a cashback card', async () => {
    const m = await signedIn(api);
    await earn({ member_id: m.id, purchase_amount: 500 });
    const retired = await reward(sys, tenantId, card, 10, { name: 'Retired' });
    await sys.admin('POST', `/admin/v1/tenants/${tenantId}/cards/${card}/rewards/${retired}`, { active: false });
    const inactive = await api('POST', `${PTS}/redeem`, {
      body: { card_id: card, reward_id: retired },
      token: m.token,
    });
    expect(inactive.status).toBe(422);
    expect(inactive.body.error).toMatchObject({ code: 'reward_inactive' });
    const otherCard = await pointsCard(sys, tenantId);
    const elsewhere = await reward(sys, tenantId, otherCard, 10);
    const notHere = await api('POST', `${PTS}/redeem`, {
      body: { card_id: card, reward_id: elsewhere },
      token: m.token,
    });
    expect(notHere.status).toBe(404);
    expect(notHere.body.error).toMatchObject({ code: 'reward_not_found' });
    const cb = await cashbackCard(sys, tenantId);
    const wrong = await api('POST', `${PTS}/redeem`, { body: { card_id: cb, reward_id: coffee }, token: m.token });
    expect(wrong.status).toBe(422);
    expect(wrong.body.error).toMatchObject({ code: 'wrong_card_type' });
    expect(await balanceOf(m.id)).toBe(500);
  });

  it('never overdraws under 50 parallel redemptions', async () => {
    const m = await signedIn(api);
    await earn({ member_id: m.id, purchase_amount: 1000 }); // 1000 points, 20 coffees
    const replies = await Promise.all(
      Array.from({ length: 50 }, () =>
        api('POST', `${PTS}/redeem`, { body: { card_id: card, reward_id: coffee }, token: m.token }),
      ),
    );
    expect(replies.filter((r) => r.status === 200)).toHaveLength(20);
    expect(
      replies.filter((r) => r.status === 422 && (r.body.error as { code: string }).code === 'insufficient_points'),
    ).toHaveLength(30);
    expect(await balanceOf(m.id)).toBe(0);
    expect(await storedAndJournal(sys, card, m.id)).toEqual({ stored: 0, journal: 0 });
  });
});

describe('refund', () => {
  it('deducts floor(refund x ratio) or the explicit number, capped by the purchase, never below zero', async () => {
    const memberId = await phoneMember(100, { reference: 'p-order-1' }); // 100
    await earn({ member_id: memberId, purchase_amount: 50 }); // 150
    const r = await refund({ member_id: memberId, refund_amount: 40.5, reference: 'p-order-1' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      success: true,
      data: {
        transaction_id: expect.any(Number),
        points_deducted: 40,
        refund_amount: 40.5,
        previous_balance: 150,
        new_balance: 110,
        member_id: memberId,
        card_id: card,
        reference: 'p-order-1',
        balance_warning: null,
        refunded_at: expect.any(String),
      },
    });
    const capped = await refund({ member_id: memberId, refund_amount: 100, reference: 'p-order-1' });
    expect(capped.body.data).toMatchObject({ points_deducted: 60, new_balance: 50 });
    const none = await refund({ member_id: memberId, refund_amount: 100, points_to_deduct: 5, reference: 'p-order-1' });
    expect(none.body.data).toMatchObject({ points_deducted: 0, new_balance: 50 });
    const warn = await refund({ member_id: memberId, refund_amount: 10, points_to_deduct: 80 });
    expect(warn.body.data).toMatchObject({
      points_deducted: 50,
      previous_balance: 50,
      new_balance: 0,
      balance_warning: { code: 'insufficient_balance', requested: 80, deducted: 50, uncovered: 30 },
    });
    expect(await storedAndJournal(sys, card, memberId)).toEqual({ stored: 0, journal: 0 });
  });
});

describe('refund references', () => {
  it("refuses another member's purchase or one on another card, and deducts nothing for an unknown one unless points_to_deduct is given", async () => {
    const owner = await phoneMember(100, { reference: 'p-owner' }); // 100
    const memberId = await phoneMember(200); // 200
    const otherCard = await pointsCard(sys, tenantId);
    await earn({ card_id: otherCard, member_id: memberId, purchase_amount: 30, reference: 'p-elsewhere' });
    for (const body of [
      { member_id: memberId, refund_amount: 100, reference: 'p-owner' },
      { member_id: memberId, refund_amount: 100, points_to_deduct: 7, reference: 'p-owner' },
      { member_id: memberId, refund_amount: 30, reference: 'p-elsewhere' },
    ]) {
      const r = await refund(body);
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      expect(r.body.error).toMatchObject({ code: 'refund_reference_mismatch' });
    }
    expect(await balanceOf(memberId)).toBe(200);
    expect(await balanceOf(owner)).toBe(100);
    expect(await balanceOf(memberId, otherCard)).toBe(30);
    expect(await journalOf(sys, card, memberId)).toEqual([
      { event: 'staff_added_points', amount: 200, reference: null },
    ]);
    expect(await journalOf(sys, card, owner)).toEqual([
      { event: 'staff_added_points', amount: 100, reference: 'p-owner' },
    ]);

    const unknown = await refund({ member_id: memberId, refund_amount: 100, reference: 'p-unknown' });
    expect(unknown.status, JSON.stringify(unknown.body)).toBe(200);
    expect(unknown.body.data).toMatchObject({ points_deducted: 0, previous_balance: 200, new_balance: 200 });
    const explicit = await refund({
      member_id: memberId,
      refund_amount: 100,
      points_to_deduct: 7,
      reference: 'p-unknown',
    });
    expect(explicit.body.data).toMatchObject({ points_deducted: 7, new_balance: 193 });
    expect(await journalOf(sys, card, memberId)).toEqual([
      { event: 'staff_added_points', amount: 200, reference: null },
      { event: 'points_refunded', amount: 0, reference: 'p-unknown' },
      { event: 'points_refunded', amount: -7, reference: 'p-unknown' },
    ]);
    expect(await storedAndJournal(sys, card, memberId)).toEqual({ stored: 193, journal: 193 });
  });
});

describe('balance and history', () => {
  it('answers balance and a paginated history, newest first, with labels', async () => {
    const m = await signedIn(api);
    await earn({ member_id: m.id, purchase_amount: 75 });
    await api('POST', `${PTS}/redeem`, { body: { card_id: card, reward_id: coffee }, token: m.token });
    await refund({ member_id: m.id, refund_amount: 5 });
    const b = await api('GET', `${PTS}/balance?card_id=${card}&member_id=${m.id}`);
    expect(b.body).toEqual({
      success: true,
      data: {
        card_id: card,
        member_id: m.id,
        points_balance: 20,
        pending_points: 0,
        held_points: 0,
        next_expiries: [],
        reward_system: 'points',
        queried_at: expect.any(String),
      },
    });
    const h = await api('GET', `${PTS}/history?card_id=${card}&member_id=${m.id}&limit=2`);
    expect(h.body.data).toEqual({
      card_id: card,
      member_id: m.id,
      transactions: [
        { id: expect.any(Number), points: -5, event: 'points_refunded', created_at: expect.any(String) },
        { id: expect.any(Number), points: -50, event: 'staff_redeemed_reward', created_at: expect.any(String) },
      ],
      pagination: { limit: 2, offset: 0, total: 3, has_more: true },
    });
    const rest = await api('GET', `${PTS}/history?card_id=${card}&member_id=${m.id}&limit=2&offset=2`);
    expect(rest.body.data!.transactions).toEqual([
      { id: expect.any(Number), points: 75, event: 'staff_added_points', created_at: expect.any(String) },
    ]);
    expect(rest.body.data!.pagination).toEqual({ limit: 2, offset: 2, total: 3, has_more: false });
    expect((await api('GET', `${PTS}/history?card_id=${card}&member_id=${m.id}&limit=101`)).status).toBe(400);
    expect((await api('GET', `${PTS}/history?card_id=${card}&member_id=${m.id}&offset=-1`)).status).toBe(400);
    const foreign = await other('GET', `${PTS}/history?card_id=${card}&member_id=${m.id}`);
    expect(foreign.body.error).toMatchObject({ code: 'card_not_found' });
    const otherCard = await pointsCard(sys, otherTenantId);
    const foreignMember = await other('GET', `${PTS}/balance?card_id=${otherCard}&member_id=${m.id}`);
    expect(foreignMember.status).toBe(404);
    expect(foreignMember.body.error).toMatchObject({ code: 'member_not_found' });
    const readOnly = apiClient(sys.url, await sys.tenant({ scopes: ['cashback_read'] }));
    expect((await readOnly('GET', `${PTS}/balance?card_id=${card}&member_id=${m.id}`)).status).toBe(403);
  });
});

describe('provisioning', () => {
  it('creates, updates, lists and reads cards and rewards through the operator API', async () => {
    const { card: created } = await sys.admin<{ card: Record<string, unknown> }>(
      'POST',
      `/admin/v1/tenants/${tenantId}/cards`,
      {
        name: 'Gold',
        reward_system: 'points',
        points_ratio: 2.5,
        unique_identifier: 'gold',
        referrer_bonus: 10,
      },
    );
    expect(created).toMatchObject({
      tenant_id: tenantId,
      unique_identifier: 'gold',
      name: 'Gold',
      description: '',
      reward_system: 'points',
      currency: 'USD',
      cashback_config: null,
      points_ratio: 2.5,
      referrer_bonus: 10,
      referee_bonus: 0,
      referral_bonus_on_first_purchase: false,
      claim_lifetime_hours: 72,
    });
    const id = created.id as number;
    const { card: changed } = await sys.admin<{ card: Record<string, unknown> }>(
      'POST',
      `/admin/v1/tenants/${tenantId}/cards/${id}`,
      { points_ratio: 0.25, referee_bonus: 5 },
    );
    expect(changed).toMatchObject({ points_ratio: 0.25, referee_bonus: 5, referrer_bonus: 10, name: 'Gold' });
    const r = await api('POST', `${PTS}/earn`, {
      body: { card_id: id, phone: '+15550003333', purchase_amount: 10.99 },
    });
    expect(r.body.data).toMatchObject({ points_earned: 2 });
    const rw = await reward(sys, tenantId, id, 100, { name: 'Mug', description: 'a mug' });
    const got = await sys.admin<{ card: { id: number }; rewards: { id: number; name: string; active: boolean }[] }>(
      'GET',
      `/admin/v1/tenants/${tenantId}/cards/${id}`,
    );
    expect(got.rewards).toEqual([
      expect.objectContaining({ id: rw, name: 'Mug', description: 'a mug', points_cost: 100, active: true }),
    ]);
    const list = await sys.admin<{ cards: { id: number }[]; total: number }>(
      'GET',
      `/admin/v1/tenants/${tenantId}/cards`,
    );
    expect(list.cards.map((c) => c.id)).toContain(id);
    expect(list.total).toBe(list.cards.length);
    const rewards = await sys.admin<{ rewards: unknown[]; total: number }>(
      'GET',
      `/admin/v1/tenants/${tenantId}/cards/${id}/rewards`,
    );
    expect(rewards.total).toBe(1);
  });

  it('refuses wrong provisioning requests', async () => {
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${sys.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${sys.env.OPERATOR_TOKEN}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return {
        status: res.status,
        body: (await res.json()) as { error?: { code: string; fields?: { field: string }[] } },
      };
    };
    const base = `/admin/v1/tenants/${tenantId}/cards`;
    const noConfig = await call('POST', base, { name: 'X', reward_system: 'cashback' });
    expect(noConfig.status).toBe(400);
    expect(noConfig.body.error!.fields!.map((f) => f.field)).toContain('cashback_config');
    const noRatio = await call('POST', base, { name: 'X', reward_system: 'points' });
    expect(noRatio.body.error!.fields!.map((f) => f.field)).toContain('points_ratio');
    expect((await call('POST', base, { name: 'X', reward_system: 'points', points_ratio: 1.0000001 })).status).toBe(
      400,
    );
    await call('POST', base, { name: 'A', reward_system: 'points', points_ratio: 1, unique_identifier: 'taken' });
    const taken = await call('POST', base, {
      name: 'B',
      reward_system: 'points',
      points_ratio: 1,
      unique_identifier: 'taken',
    });
    expect(taken.status).toBe(409);
    expect(taken.body.error!.code).toBe('card_identifier_taken');
    const cb = await cashbackCard(sys, tenantId);
    const rewardOnCashback = await call('POST', `${base}/${cb}/rewards`, { name: 'R', points_cost: 1 });
    expect(rewardOnCashback.status).toBe(422);
    const ratioOnCashback = await call('POST', `${base}/${cb}`, { points_ratio: 2 });
    expect(ratioOnCashback.body.error!.code).toBe('wrong_card_type');
    const foreign = await call('GET', `/admin/v1/tenants/${otherTenantId}/cards/${card}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error!.code).toBe('card_not_found');
    const noToken = await fetch(`${sys.url}${base}`);
    expect(noToken.status).toBe(401);
    // A tenant that does not exist gets no card (one was made, and a tenant created later with
    // that id would have found it as its own).
    const ghost = await call('POST', '/admin/v1/tenants/999999/cards', {
      name: 'Ghost',
      reward_system: 'points',
      points_ratio: 1,
    });
    checkResponse('POST', '/admin/v1/tenants/999999/cards', ghost.status, ghost.body);
    expect(ghost.status).toBe(404);
    expect(ghost.body.error!.code).toBe('tenant_not_found');
    const { rows } = await sys.db.query('SELECT id FROM ledger.cards WHERE tenant_id = 999999');
    expect(rows).toEqual([]);
  });
});
