import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { connectAs } from '../../../test/support/nats.ts';

/**
 * Reward claims end to end through the gateway: identity (claim codes, masked members, mail),
 * ledger (cards, rewards, the debit) and claims, over real Postgres, NATS and SMTP.
 */
let sys: TestSystem;
let api: ReturnType<typeof apiClient>;
let live: ReturnType<typeof apiClient>;
let other: ReturnType<typeof apiClient>;
let tenantId: number;
let liveTenantId: number;
let card: number;
let reward: number; // costs 100 points
const CLAIMS = '/api/v1/loyalty/claims';
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

type Api = ReturnType<typeof apiClient>;
type Body = Record<string, unknown>;

// ---- ledger provisioning and points, through the operator API and the public API ----------------

async function createPointsCard(tenant: number, extra: Body = {}): Promise<number> {
  const r = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenant}/cards`, {
    name: `Points ${randomUUID().slice(0, 6)}`,
    reward_system: 'points',
    points_ratio: 1,
    ...extra,
  });
  return r.card.id;
}

async function createCashbackCard(tenant: number): Promise<number> {
  const r = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenant}/cards`, {
    name: `Cashback ${randomUUID().slice(0, 6)}`,
    reward_system: 'cashback',
    cashback_config: {
      cashback_percentage: 5,
      cashback_min_amount: 0,
      cashback_max_amount: 100,
      allows_pin_redemption: false,
    },
  });
  return r.card.id;
}

async function createReward(tenant: number, cardId: number, pointsCost: number, extra: Body = {}): Promise<number> {
  const r = await sys.admin<{ reward: { id: number } }>('POST', `/admin/v1/tenants/${tenant}/cards/${cardId}/rewards`, {
    name: `Reward ${pointsCost}`,
    points_cost: pointsCost,
    ...extra,
  });
  return r.reward.id;
}

/** Earn points (the member is created on first earn); returns the member id. */
async function earn(client: Api, cardId: number, email: string, points: number): Promise<number> {
  const r = await client('POST', '/api/v1/loyalty/points/earn', {
    body: { card_id: cardId, email, member_name: `Member ${email.split('@')[0]}`, purchase_amount: points },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data!.member_id as number;
}

async function balance(client: Api, cardId: number, memberId: number): Promise<number> {
  const r = await client('GET', `/api/v1/loyalty/points/balance?card_id=${cardId}&member_id=${memberId}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data!.points_balance as number;
}

async function claimedEntries(
  client: Api,
  cardId: number,
  memberId: number,
): Promise<{ points: number; event: string }[]> {
  const r = await client('GET', `/api/v1/loyalty/points/history?card_id=${cardId}&member_id=${memberId}&limit=100`);
  expect(r.status).toBe(200);
  return (r.body.data!.transactions as { points: number; event: string }[]).filter((t) => t.event === 'reward_claimed');
}

// ---- claim helpers ---------------------------------------------------------------------------------

let n = 0;
const newEmail = () => `claimer${++n}.${Date.now()}@example.com`;

/** A member with `points` on the card. */
async function member(points = 500, client: Api = api, cardId = card) {
  const email = newEmail();
  const id = await earn(client, cardId, email, points);
  return { email, id };
}

async function code(
  m: { email: string },
  opts: { client?: Api; cardId?: number; rewardId?: number } = {},
): Promise<string> {
  const r = await (opts.client ?? api)('POST', `${CLAIMS}/request-otp`, {
    body: { member_email: m.email, card_id: opts.cardId ?? card, reward_id: opts.rewardId },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return (r.body.data!.otp_code as string | undefined) ?? (await sys.mail.codeFor(m.email));
}

async function claim(m: { email: string }, opts: { rewardId?: number; note?: string } = {}): Promise<number> {
  const verification_code = await code(m);
  const r = await api('POST', CLAIMS, {
    body: {
      member_email: m.email,
      card_id: card,
      reward_id: opts.rewardId ?? reward,
      verification_code,
      member_note: opts.note,
    },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return (r.body.data!.claim_request as { id: number }).id;
}

async function getClaim(id: number, client: Api = api) {
  const r = await client('GET', `${CLAIMS}/${id}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data!.claim_request as Body;
}

const approve = (id: number, body: Body = {}, headers: Record<string, string> = {}) =>
  api('POST', `${CLAIMS}/${id}/approve`, { body, headers });
const reject = (id: number, body: Body = {}, headers: Record<string, string> = {}) =>
  api('POST', `${CLAIMS}/${id}/reject`, { body, headers });

async function outboxEvents(type: string, claimId: number): Promise<{ published: boolean; data: Body }[]> {
  const { rows } = await sys.db.query<{ published_at: Date | null; payload: { data: Body } }>(
    `SELECT published_at, payload FROM claims.outbox WHERE payload->>'type' = $1 AND (payload->'data'->>'claim_request_id')::bigint = $2`,
    [`claims.${type}`, claimId],
  );
  return rows.map((r) => ({ published: r.published_at !== null, data: r.payload.data }));
}

beforeAll(async () => {
  // The sweeper's own timer is kept out of the way (the approval saga and expiry are tested on
  // the claims service alone: claims.service.test.ts).
  sys = await startTestSystem({
    services: ['identity', 'ledger', 'claims'],
    env: { CLAIM_SWEEP_INTERVAL_MS: String(HOUR) },
  });
  const t = await sys.tenant({ sandbox: true });
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
  const l = await sys.tenant({ sandbox: false });
  liveTenantId = l.tenantId;
  live = apiClient(sys.url, l);
  other = apiClient(sys.url, await sys.tenant({ sandbox: true }));
  card = await createPointsCard(tenantId);
  reward = await createReward(tenantId, card, 100, { name: 'Free coffee' });
});
afterAll(async () => sys?.stop());

describe('request claim OTP', () => {
  it('mails a 6-digit code valid 10 minutes and returns it to a sandbox tenant', async () => {
    const m = await member();
    const r = await api('POST', `${CLAIMS}/request-otp`, {
      body: { member_email: m.email, card_id: card, reward_id: reward },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      message: expect.any(String),
      data: { expires_at: expect.any(String), expires_in_minutes: 10, otp_code: expect.stringMatching(/^\d{6}$/) },
    });
    const expiresAt = Date.parse(r.body.data!.expires_at as string);
    expect(Math.abs(expiresAt - (sys.clock.now().getTime() + 10 * MINUTE))).toBeLessThan(5_000);
    expect(await sys.mail.codeFor(m.email)).toBe(r.body.data!.otp_code);
  });

  it('never returns the code to a live tenant, which still mails it', async () => {
    const liveCard = await createPointsCard(liveTenantId);
    const m = await member(10, live, liveCard);
    const r = await live('POST', `${CLAIMS}/request-otp`, { body: { member_email: m.email, card_id: liveCard } });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ expires_at: expect.any(String), expires_in_minutes: 10 });
    expect(await sys.mail.codeFor(m.email)).toMatch(/^\d{6}$/);
  });

  it('answers member_not_found for an unknown email', async () => {
    const r = await api('POST', `${CLAIMS}/request-otp`, {
      body: { member_email: 'nobody@example.com', card_id: card },
    });
    expect(r.status).toBe(404);
    expect(r.body.error).toMatchObject({ code: 'member_not_found' });
  });

  it('refuses a missing or foreign card, a cashback card, and a reward that is not the card’s or inactive', async () => {
    const m = await member();
    const foreignCard = await createPointsCard(liveTenantId);
    const cashback = await createCashbackCard(tenantId);
    const otherCard = await createPointsCard(tenantId);
    const otherReward = await createReward(tenantId, otherCard, 10);
    const inactive = await createReward(tenantId, card, 10, { active: false });
    const cases: [Body, number, string][] = [
      [{ card_id: 999_999 }, 404, 'card_not_found'],
      [{ card_id: foreignCard }, 404, 'card_not_found'],
      [{ card_id: cashback }, 422, 'wrong_card_type'],
      [{ card_id: card, reward_id: otherReward }, 404, 'reward_not_found'],
      [{ card_id: card, reward_id: inactive }, 422, 'reward_inactive'],
    ];
    for (const [body, status, errorCode] of cases) {
      const r = await api('POST', `${CLAIMS}/request-otp`, { body: { member_email: m.email, ...body } });
      expect([r.status, r.body.error?.code], JSON.stringify(body)).toEqual([status, errorCode]);
    }
    // No code was mailed (the member's only mail is the points-earned notice).
    expect(
      sys.mail.messages.filter((x) => x.to.includes(m.email) && /claim verification/i.test(x.subject)),
    ).toHaveLength(0);
  });

  it('validates the body, naming the fields', async () => {
    const r = await api('POST', `${CLAIMS}/request-otp`, { body: { member_email: 'not-an-email', card_id: 'x' } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'validation_error' });
    expect((r.body.error!.fields as { field: string }[]).map((f) => f.field).sort()).toEqual([
      'card_id',
      'member_email',
    ]);
  });

  it('applies the code cooldown', async () => {
    const m = await member();
    await code(m);
    const r = await api('POST', `${CLAIMS}/request-otp`, { body: { member_email: m.email, card_id: card } });
    expect(r.status).toBe(429);
    expect(r.body.error).toMatchObject({ code: 'otp_cooldown', retry_after_seconds: expect.any(Number) });
  });

  it('shares the cooldown and the hourly cap with sign-in codes: one budget of mails per member', async () => {
    const m = await member();
    const signIn = () => api('POST', '/api/v1/auth/member/request-otp', { body: { email: m.email } });
    const claimCode = () => api('POST', `${CLAIMS}/request-otp`, { body: { member_email: m.email, card_id: card } });
    expect((await signIn()).status).toBe(200);
    const early = await claimCode(); // another purpose, still within the cooldown
    expect([early.status, early.body.error?.code]).toEqual([429, 'otp_cooldown']);
    // Five codes an hour (OTP_HOURLY_LIMIT) over both purposes: alternating does not double them.
    for (const next of [claimCode, signIn, claimCode, signIn]) {
      sys.clock.advance(61_000);
      const r = await next();
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    for (const next of [claimCode, signIn]) {
      sys.clock.advance(61_000);
      const r = await next();
      expect([r.status, r.body.error?.code]).toEqual([429, 'otp_hourly_limit']);
    }
  });

  it('holds no cooldown after a used code: a member who just verified the registration code gets a claim code at once', async () => {
    const email = newEmail();
    const phone = `+1555${String(2_000_000 + n * 7919).slice(-7)}`;
    const reg = await api('POST', '/api/v1/auth/member/register', { body: { name: 'Just Registered', email, phone } });
    expect(reg.status, JSON.stringify(reg.body)).toBe(200);
    const verified = await api('POST', '/api/v1/auth/member/verify-otp', {
      body: { email, code: reg.body.data!.otp_code },
    });
    expect(verified.status, JSON.stringify(verified.body)).toBe(200);
    const claimCode = () => api('POST', `${CLAIMS}/request-otp`, { body: { member_email: email, card_id: card } });
    const first = await claimCode();
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    // The claim code is unused: the next one still waits for the cooldown.
    const again = await claimCode();
    expect([again.status, again.body.error?.code]).toEqual([429, 'otp_cooldown']);
  });

  it('needs the points_write scope', async () => {
    const readOnly = apiClient(sys.url, await sys.tenant({ scopes: ['points_read'] }));
    const r = await readOnly('POST', `${CLAIMS}/request-otp`, {
      body: { member_email: 'a@example.com', card_id: card },
    });
    expect(r.status).toBe(403);
    expect(r.body.error).toMatchObject({ code: 'insufficient_scope' });
  });
});

describe('create claim request', () => {
  it('creates a pending request with the verified member and keeps the member note', async () => {
    const m = await member();
    const verification_code = await code(m, { rewardId: reward });
    const r = await api('POST', CLAIMS, {
      body: {
        member_email: m.email.toUpperCase(),
        card_id: card,
        reward_id: reward,
        verification_code,
        member_note: 'Oat milk, please',
      },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      data: { claim_request: { id: expect.any(Number), status: 'pending', created_at: expect.any(String) } },
    });
    const id = (r.body.data!.claim_request as { id: number }).id;
    const c = await getClaim(id);
    expect(c).toMatchObject({
      status: 'pending',
      member: { id: m.id },
      member_note: 'Oat milk, please',
      reward: { id: reward, name: 'Free coffee', points_cost: 100 },
    });
    const events = await outboxEvents('claim_requested', id);
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toMatchObject({ member_id: m.id, reward_name: 'Free coffee' });
  });

  it('refuses a wrong, used or expired code and a member without a code, creating nothing', async () => {
    const before = await totalClaims();
    const m = await member();
    // no code requested yet
    let r = await api('POST', CLAIMS, {
      body: { member_email: m.email, card_id: card, reward_id: reward, verification_code: '123456' },
    });
    expect([r.status, r.body.error?.code]).toEqual([422, 'invalid_verification_code']);
    // wrong code
    const good = await code(m);
    const wrong = good === '000000' ? '111111' : '000000';
    r = await api('POST', CLAIMS, {
      body: { member_email: m.email, card_id: card, reward_id: reward, verification_code: wrong },
    });
    expect([r.status, r.body.error?.code]).toEqual([422, 'invalid_verification_code']);
    expect(r.body.error!.reason).toEqual(expect.any(String));
    // right code works once, then it is used
    r = await api('POST', CLAIMS, {
      body: { member_email: m.email, card_id: card, reward_id: reward, verification_code: good },
    });
    expect(r.status).toBe(200);
    r = await api('POST', CLAIMS, {
      body: { member_email: m.email, card_id: card, reward_id: reward, verification_code: good },
    });
    expect([r.status, r.body.error?.code]).toEqual([422, 'invalid_verification_code']);
    expect(await totalClaims()).toBe(before + 1);
  });

  it('refuses an expired code', async () => {
    const m = await member();
    const c = await code(m);
    sys.clock.advance(10 * MINUTE + 1_000);
    const r = await api('POST', CLAIMS, {
      body: { member_email: m.email, card_id: card, reward_id: reward, verification_code: c },
    });
    expect([r.status, r.body.error?.code]).toEqual([422, 'invalid_verification_code']);
    expect(r.body.error!.reason).toBe('otp_expired');
  });

  it('answers an unknown email exactly as a member without a code or with a wrong one (no member enumeration)', async () => {
    const known = await member();
    const withCode = await member();
    const good = await code(withCode);
    const wrong = good === '000000' ? '111111' : '000000';
    const attempt = async (email: string, verification_code: string) => {
      const r = await api('POST', CLAIMS, {
        body: { member_email: email, card_id: card, reward_id: reward, verification_code },
      });
      return { status: r.status, error: r.body.error };
    };
    const unknown = await attempt(`nobody.${Date.now()}@example.com`, '123456');
    expect(unknown).toEqual({
      status: 422,
      error: { code: 'invalid_verification_code', message: expect.any(String), reason: 'invalid_code' },
    });
    expect(await attempt(known.email, '123456')).toEqual(unknown); // a member who asked for no code
    expect(await attempt(withCode.email, wrong)).toEqual(unknown); // wrong digits: no attempts_remaining either
  });

  it('refuses a missing code or a malformed one as a validation error', async () => {
    const m = await member();
    let r = await api('POST', CLAIMS, { body: { member_email: m.email, card_id: card, reward_id: reward } });
    expect(r.status).toBe(400);
    expect(r.body.error!.fields).toEqual([{ field: 'verification_code', message: expect.any(String) }]);
    r = await api('POST', CLAIMS, {
      body: { member_email: m.email, card_id: card, reward_id: reward, verification_code: '12345' },
    });
    expect(r.status).toBe(400);
  });

  it('refuses a reward that is missing, inactive or of another card without spending the code', async () => {
    const m = await member();
    const c = await code(m);
    const otherCard = await createPointsCard(tenantId);
    const otherReward = await createReward(tenantId, otherCard, 10);
    const inactive = await createReward(tenantId, card, 10, { active: false });
    for (const [rewardId, status, errorCode] of [
      [999_999, 404, 'reward_not_found'],
      [otherReward, 404, 'reward_not_found'],
      [inactive, 422, 'reward_inactive'],
    ] as const) {
      const r = await api('POST', CLAIMS, {
        body: { member_email: m.email, card_id: card, reward_id: rewardId, verification_code: c },
      });
      expect([r.status, r.body.error?.code]).toEqual([status, errorCode]);
    }
    const r = await api('POST', CLAIMS, {
      body: { member_email: m.email, card_id: card, reward_id: reward, verification_code: c },
    });
    expect(r.status).toBe(200);
  });

  it('refuses a code issued for another card or another reward', async () => {
    const second = await createPointsCard(tenantId);
    const m = await member();
    await earn(api, second, m.email, 50);
    let c = await code(m, { cardId: second });
    let r = await api('POST', CLAIMS, {
      body: { member_email: m.email, card_id: card, reward_id: reward, verification_code: c },
    });
    expect([r.status, r.body.error?.code, r.body.error?.reason]).toEqual([
      422,
      'invalid_verification_code',
      'issued_for_other_claim',
    ]);
    const tea = await createReward(tenantId, card, 20, { name: 'Tea' });
    sys.clock.advance(61_000); // the code cooldown
    c = await code(m, { rewardId: tea });
    r = await api('POST', CLAIMS, {
      body: { member_email: m.email, card_id: card, reward_id: reward, verification_code: c },
    });
    expect([r.status, r.body.error?.code, r.body.error?.reason]).toEqual([
      422,
      'invalid_verification_code',
      'issued_for_other_claim',
    ]);
  });

  it('replays a create retried with the same Idempotency-Key', async () => {
    const m = await member();
    const c = await code(m);
    const body = { member_email: m.email, card_id: card, reward_id: reward, verification_code: c };
    const key = randomUUID();
    const first = await api('POST', CLAIMS, { body, headers: { 'idempotency-key': key } });
    const second = await api('POST', CLAIMS, { body, headers: { 'idempotency-key': key } });
    expect(first.status).toBe(200);
    expect(second.body).toEqual(first.body);
    const list = await api('GET', `${CLAIMS}?card_id=${card}&limit=100`);
    const mine = (list.body.data!.claim_requests as { member: { id: number } }[]).filter((x) => x.member.id === m.id);
    expect(mine).toHaveLength(1);
  });
});

async function totalClaims(): Promise<number> {
  const r = await api('GET', `${CLAIMS}?card_id=${card}&limit=1`);
  return (r.body.data!.pagination as { total: number }).total;
}

describe('list and get', () => {
  it('lists the full records of a card newest first, with pagination and a status filter', async () => {
    const listCard = await createPointsCard(tenantId);
    const listReward = await createReward(tenantId, listCard, 5, { name: 'Sticker' });
    const ids: number[] = [];
    const m = await member(100, api, listCard);
    for (let i = 0; i < 3; i++) {
      if (i > 0) sys.clock.advance(61_000); // the code cooldown
      const c = await code(m, { cardId: listCard });
      const r = await api('POST', CLAIMS, {
        body: {
          member_email: m.email,
          card_id: listCard,
          reward_id: listReward,
          verification_code: c,
          member_note: `note ${i}`,
        },
      });
      ids.push((r.body.data!.claim_request as { id: number }).id);
    }
    expect((await reject(ids[0]!, { staff_note: 'no' })).status).toBe(200);

    const all = await api('GET', `${CLAIMS}?card_id=${listCard}`);
    expect(all.status).toBe(200);
    const records = all.body.data!.claim_requests as Body[];
    expect(records.map((r) => r.id)).toEqual([...ids].reverse());
    expect(all.body.data!.pagination).toEqual({ limit: 20, offset: 0, total: 3, has_more: false });
    expect(records[2]).toEqual({
      id: ids[0],
      status: 'rejected',
      member: { id: m.id, name: expect.any(String), email: expect.stringContaining('***') },
      card_id: listCard,
      reward: { id: listReward, name: 'Sticker', points_cost: 5 },
      member_note: 'note 0',
      staff_note: 'no',
      points_deducted: null,
      created_at: expect.any(String),
      approved_at: null,
      rejected_at: expect.any(String),
      expires_at: expect.any(String),
    });
    expect((records[2]!.member as { email: string }).email).not.toBe(m.email);

    const page = await api('GET', `${CLAIMS}?card_id=${listCard}&limit=2&offset=1`);
    expect((page.body.data!.claim_requests as Body[]).map((r) => r.id)).toEqual([ids[1], ids[0]]);
    expect(page.body.data!.pagination).toEqual({ limit: 2, offset: 1, total: 3, has_more: false });
    const first = await api('GET', `${CLAIMS}?card_id=${listCard}&limit=1`);
    expect(first.body.data!.pagination).toEqual({ limit: 1, offset: 0, total: 3, has_more: true });

    const pending = await api('GET', `${CLAIMS}?card_id=${listCard}&status=pending`);
    expect((pending.body.data!.claim_requests as Body[]).map((r) => r.id)).toEqual([ids[2], ids[1]]);
    const rejected = await api('GET', `${CLAIMS}?card_id=${listCard}&status=rejected`);
    expect((rejected.body.data!.claim_requests as Body[]).map((r) => r.id)).toEqual([ids[0]]);
  });

  it('refuses an unknown status, a missing card_id and a bad limit, naming the field', async () => {
    let r = await api('GET', `${CLAIMS}?card_id=${card}&status=done`);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({
      code: 'validation_error',
      fields: [{ field: 'status', message: expect.any(String) }],
    });
    r = await api('GET', CLAIMS);
    expect(r.status).toBe(400);
    expect((r.body.error!.fields as { field: string }[]).map((f) => f.field)).toEqual(['card_id']);
    r = await api('GET', `${CLAIMS}?card_id=${card}&limit=101`);
    expect((r.body.error!.fields as { field: string }[]).map((f) => f.field)).toEqual(['limit']);
  });

  it('answers card_not_found for a missing or foreign card and claim_request_not_found for a missing or foreign request', async () => {
    let r = await api('GET', `${CLAIMS}?card_id=999999`);
    expect([r.status, r.body.error?.code]).toEqual([404, 'card_not_found']);
    r = await other('GET', `${CLAIMS}?card_id=${card}`);
    expect([r.status, r.body.error?.code]).toEqual([404, 'card_not_found']);
    const id = await claim(await member());
    for (const [client, path] of [
      [api, `${CLAIMS}/999999`],
      [other, `${CLAIMS}/${id}`],
    ] as const) {
      r = await client('GET', path);
      expect([r.status, r.body.error?.code]).toEqual([404, 'claim_request_not_found']);
    }
    for (const action of ['approve', 'reject']) {
      r = await other('POST', `${CLAIMS}/${id}/${action}`, { body: {} });
      expect([r.status, r.body.error?.code]).toEqual([404, 'claim_request_not_found']);
    }
    expect((await getClaim(id)).status).toBe('pending');
  });

  it('needs points_read to read', async () => {
    const writeOnly = apiClient(sys.url, await sys.tenant({ scopes: ['points_write'] }));
    const r = await writeOnly('GET', `${CLAIMS}?card_id=${card}`);
    expect(r.status).toBe(403);
  });
});

describe('approve', () => {
  it('deducts the reward points through the ledger, records approved_at and mails the member', async () => {
    const m = await member(250);
    const id = await claim(m);
    const r = await approve(id, { staff_note: 'Enjoy' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      data: { claim_request: { id, status: 'approved', points_deducted: 100, approved_at: expect.any(String) } },
    });
    expect(await balance(api, card, m.id)).toBe(150);
    expect(await claimedEntries(api, card, m.id)).toEqual([
      expect.objectContaining({ points: -100, event: 'reward_claimed' }),
    ]);
    expect(await getClaim(id)).toMatchObject({
      status: 'approved',
      points_deducted: 100,
      staff_note: 'Enjoy',
      approved_at: (r.body.data!.claim_request as Body).approved_at,
    });
    const mail = await sys.mail.waitFor(m.email, (x) => /was approved/i.test(x.subject));
    expect(mail.text).toContain('Free coffee');
    expect(mail.text).toContain('100 points');
    const events = await outboxEvents('claim_approved', id);
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toMatchObject({
      member_id: m.id,
      reward_name: 'Free coffee',
      points_deducted: 100,
      staff_note: 'Enjoy',
    });
  });

  it('refuses a second approval with 409 naming the status, deducting nothing more', async () => {
    const m = await member(300);
    const id = await claim(m);
    expect((await approve(id)).status).toBe(200);
    const again = await approve(id);
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'claim_request_not_pending', current_status: 'approved' });
    const rej = await reject(id);
    expect(rej.body.error).toMatchObject({ code: 'claim_request_not_pending', current_status: 'approved' });
    expect(await balance(api, card, m.id)).toBe(200);
  });

  it('replays an approval retried with the same Idempotency-Key and refuses the key with other parameters', async () => {
    const m = await member(500);
    const id = await claim(m);
    const key = randomUUID();
    const first = await approve(id, { staff_note: 'ok' }, { 'idempotency-key': key });
    const second = await approve(id, { staff_note: 'ok' }, { 'idempotency-key': key });
    expect(first.status).toBe(200);
    expect(second.body).toEqual(first.body);
    const reused = await approve(id, { staff_note: 'different' }, { 'idempotency-key': key });
    expect([reused.status, reused.body.error?.code]).toEqual([409, 'idempotency_key_reused']);
    expect(await balance(api, card, m.id)).toBe(400);
    expect(await claimedEntries(api, card, m.id)).toHaveLength(1);
  });
});

describe('reject', () => {
  it('rejects a pending request, keeps the points, records rejected_at and staff_note, and mails the member', async () => {
    const m = await member(200);
    const id = await claim(m);
    const r = await reject(id, { staff_note: 'Out of stock' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      data: { claim_request: { id, status: 'rejected', rejected_at: expect.any(String) } },
    });
    expect(await balance(api, card, m.id)).toBe(200);
    expect(await getClaim(id)).toMatchObject({
      status: 'rejected',
      staff_note: 'Out of stock',
      rejected_at: (r.body.data!.claim_request as Body).rejected_at,
      points_deducted: null,
    });
    const mail = await sys.mail.waitFor(m.email, (x) => /not approved/i.test(x.subject));
    expect(mail.text).toContain('Out of stock');
    expect(await outboxEvents('claim_rejected', id)).toEqual([
      {
        published: expect.any(Boolean),
        data: expect.objectContaining({ member_id: m.id, staff_note: 'Out of stock' }),
      },
    ]);
  });

  it('refuses to approve or reject a rejected request, naming its status', async () => {
    const m = await member(200);
    const id = await claim(m);
    expect((await reject(id)).status).toBe(200);
    for (const r of [await reject(id), await approve(id)]) {
      expect(r.status).toBe(409);
      expect(r.body.error).toMatchObject({ code: 'claim_request_not_pending', current_status: 'rejected' });
    }
    expect(await balance(api, card, m.id)).toBe(200);
  });

  it('validates the request id and the note', async () => {
    let r = await reject(0);
    expect(r.status).toBe(400);
    expect((r.body.error!.fields as { field: string }[]).map((f) => f.field)).toEqual(['request_id']);
    r = await api('POST', `${CLAIMS}/abc/approve`, { body: {} });
    expect(r.status).toBe(400);
    r = await reject(1, { staff_note: 'x'.repeat(1001) });
    expect((r.body.error!.fields as { field: string }[]).map((f) => f.field)).toEqual(['staff_note']);
  });
});

describe('events', () => {
  it('publishes every claim event through the outbox to JetStream', async () => {
    const m = await member(500);
    const id = await claim(m);
    expect((await approve(id)).status).toBe(200);
    for (const type of ['claim_requested', 'claim_approved']) {
      await expect
        .poll(async () => (await outboxEvents(type, id)).map((e) => e.published), { timeout: 5_000 })
        .toEqual([true]);
    }
    const nc = await connectAs('admin', { url: sys.env.NATS_URL });
    try {
      const jsm = await nc.jetstreamManager();
      const root = sys.env.SUBJECT_ROOT!;
      const stream = `${root.toUpperCase()}_EVENTS`;
      const approved = await jsm.streams.getMessage(stream, { last_by_subj: `${root}.events.claims.claim_approved` });
      expect(approved.json<{ type: string; data: Body }>()).toMatchObject({
        type: 'claims.claim_approved',
        data: { claim_request_id: expect.any(Number) },
      });
    } finally {
      await nc.close();
    }
  });
});
