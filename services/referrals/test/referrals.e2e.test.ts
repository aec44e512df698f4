import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { apply, balance, card, codeOf, earn, eventually, history, member, type Api } from './support.ts';

const DAY = 24 * 60 * 60 * 1000;
let sys: TestSystem;
let tenant: { tenantId: number; appId: string; apiKey: string };
let api: Api;
let readOnly: Api;
let other: Api; // another tenant
let otherTenant: number;
let pointsCard: number;

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger', 'referrals'] });
  tenant = await sys.tenant();
  api = apiClient(sys.url, tenant);
  readOnly = apiClient(sys.url, await sys.tenant({ scopes: [] }));
  const o = await sys.tenant();
  otherTenant = o.tenantId;
  other = apiClient(sys.url, o);
  pointsCard = await card(sys, tenant.tenantId, { referrer_bonus: 100, referee_bonus: 50 });
});
afterAll(async () => sys?.stop());

/** No raw email anywhere in a response body. */
function expectNoRawEmail(body: unknown, ...emails: string[]) {
  const text = JSON.stringify(body);
  for (const e of emails) expect(text).not.toContain(e);
}

describe('referral code', () => {
  it('is created on first request, the same afterwards, 8 unambiguous characters, one per card and member', async () => {
    const a = await member(api);
    const b = await member(api);
    const r = await api('GET', `/api/v1/loyalty/cards/${pointsCard}/members/${a.id}/referral-code`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      data: { referral_code: expect.stringMatching(/^[2-9A-HJKMNP-TV-Z]{8}$/), card_id: pointsCard, member_id: a.id },
    });
    const again = await api('GET', `/api/v1/loyalty/cards/${pointsCard}/members/${a.id}/referral-code`);
    expect(again.body).toEqual(r.body);
    const code = r.body.data!.referral_code as string;
    expect(await codeOf(api, pointsCard, b.id)).not.toBe(code);
    const secondCard = await card(sys, tenant.tenantId);
    expect(await codeOf(api, secondCard, a.id)).not.toBe(code);
  });

  it('gives one code to concurrent first requests', async () => {
    const a = await member(api);
    const codes = await Promise.all(Array.from({ length: 6 }, () => codeOf(api, pointsCard, a.id)));
    expect(new Set(codes).size).toBe(1);
  });

  it('refuses an unknown or foreign member, an unknown or foreign card and a cashback card', async () => {
    const a = await member(api);
    const stranger = await member(other);
    const foreignCard = await card(sys, otherTenant);
    const cashback = await card(sys, tenant.tenantId, { reward_system: 'cashback' });
    const cases: [string, number, string][] = [
      [`/api/v1/loyalty/cards/${pointsCard}/members/999999/referral-code`, 404, 'member_not_found'],
      [`/api/v1/loyalty/cards/${pointsCard}/members/${stranger.id}/referral-code`, 404, 'member_not_found'],
      [`/api/v1/loyalty/cards/999999/members/${a.id}/referral-code`, 404, 'card_not_found'],
      [`/api/v1/loyalty/cards/${foreignCard}/members/${a.id}/referral-code`, 404, 'card_not_found'],
      [`/api/v1/loyalty/cards/${cashback}/members/${a.id}/referral-code`, 422, 'wrong_card_type'],
      [`/api/v1/loyalty/cards/abc/members/${a.id}/referral-code`, 400, 'validation_error'],
    ];
    for (const [path, status, code] of cases) {
      const r = await api('GET', path);
      expect([r.status, (r.body.error as { code: string }).code], path).toEqual([status, code]);
    }
  });

  it('needs the points_read scope', async () => {
    const r = await readOnly('GET', `/api/v1/loyalty/cards/${pointsCard}/members/1/referral-code`);
    expect(r.status).toBe(403);
    expect(r.body.error).toMatchObject({ code: 'insufficient_scope', required_scope: 'points_read' });
  });
});

describe('validate code', () => {
  it('answers the referrer and the card bonus information for a valid code, typed in any case', async () => {
    const a = await member(api, 'Alice Referrer');
    const code = await codeOf(api, pointsCard, a.id);
    for (const typed of [code, code.toLowerCase(), `${code.slice(0, 4)}-${code.slice(4)}`]) {
      const r = await api('POST', '/api/v1/loyalty/referrals/validate-code', {
        body: { referral_code: typed, card_id: pointsCard },
      });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({
        success: true,
        data: {
          is_valid: true,
          referrer: { id: a.id, name: 'Alice Referrer', bonus_info: { referrer_bonus: 100, referee_bonus: 50 } },
        },
      });
    }
  });

  it('answers is_valid false for an unknown code, a code of another card and a code of another tenant', async () => {
    const a = await member(api);
    const code = await codeOf(api, pointsCard, a.id);
    const secondCard = await card(sys, tenant.tenantId);
    const foreign = await member(other);
    const foreignCard = await card(sys, otherTenant);
    const foreignCode = await codeOf(other, foreignCard, foreign.id);
    const cases = [
      { referral_code: 'ZZZZZZZZ', card_id: pointsCard },
      { referral_code: 'not a code at all', card_id: pointsCard },
      { referral_code: code, card_id: secondCard },
      { referral_code: code, card_id: 999999 },
      { referral_code: foreignCode, card_id: foreignCard },
    ];
    for (const body of cases) {
      const r = await api('POST', '/api/v1/loyalty/referrals/validate-code', { body });
      expect(r.status).toBe(200);
      expect(r.body, JSON.stringify(body)).toEqual({ success: true, data: { is_valid: false, referrer: null } });
    }
  });

  it('refuses a missing field by name and needs points_read', async () => {
    const r = await api('POST', '/api/v1/loyalty/referrals/validate-code', { body: { card_id: pointsCard } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'validation_error', fields: [{ field: 'referral_code' }] });
    const s = await readOnly('POST', '/api/v1/loyalty/referrals/validate-code', {
      body: { referral_code: 'ZZZZZZZZ', card_id: pointsCard },
    });
    expect(s.status).toBe(403);
  });
});

describe('apply', () => {
  it('creates the referral and credits both parties once through the ledger (referral_bonus)', async () => {
    const referrer = await member(api);
    const referee = await member(api);
    const code = await codeOf(api, pointsCard, referrer.id);
    const r = await apply(api, { referral_code: code, card_id: pointsCard, referee_member_id: referee.id });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      message: expect.any(String),
      data: {
        referral: {
          id: expect.any(Number),
          referrer_id: referrer.id,
          referee_id: referee.id,
          referrer_bonus: 100,
          referee_bonus: 50,
          status: 'completed',
          created_at: expect.any(String),
        },
      },
    });
    expect(new Date((r.body.data!.referral as { created_at: string }).created_at).toISOString()).toBe(
      (r.body.data!.referral as { created_at: string }).created_at,
    );
    expect(await balance(api, pointsCard, referrer.id)).toBe(100);
    expect(await balance(api, pointsCard, referee.id)).toBe(50);
    expect(await history(api, pointsCard, referrer.id)).toEqual([
      expect.objectContaining({ points: 100, event: 'referral_bonus' }),
    ]);
    expect(await history(api, pointsCard, referee.id)).toEqual([
      expect.objectContaining({ points: 50, event: 'referral_bonus' }),
    ]);
  });

  it('refuses a second referral of the same referee on the card with 409, paying nothing more', async () => {
    const [r1, r2, referee] = [await member(api), await member(api), await member(api)];
    const c1 = await codeOf(api, pointsCard, r1.id);
    const c2 = await codeOf(api, pointsCard, r2.id);
    expect((await apply(api, { referral_code: c1, card_id: pointsCard, referee_member_id: referee.id })).status).toBe(
      200,
    );
    for (const code of [c1, c2]) {
      const again = await apply(api, { referral_code: code, card_id: pointsCard, referee_member_id: referee.id });
      expect(again.status).toBe(409);
      expect(again.body).toEqual({
        success: false,
        error: { code: 'referral_already_applied', message: expect.any(String) },
      });
    }
    expect(await balance(api, pointsCard, referee.id)).toBe(50);
    expect(await balance(api, pointsCard, r1.id)).toBe(100);
    expect(await balance(api, pointsCard, r2.id)).toBe(0);
    // The same referee may still be referred on another card.
    const secondCard = await card(sys, tenant.tenantId, { referrer_bonus: 10, referee_bonus: 5 });
    const onSecond = await apply(api, {
      referral_code: await codeOf(api, secondCard, r2.id),
      card_id: secondCard,
      referee_member_id: referee.id,
    });
    expect(onSecond.status).toBe(200);
  });

  it('refuses a self referral (422), an unknown code (404), an unknown or foreign referee (404), a foreign code, an unknown card and a cashback card', async () => {
    const referrer = await member(api);
    const referee = await member(api);
    const stranger = await member(other);
    const code = await codeOf(api, pointsCard, referrer.id);
    const foreignCard = await card(sys, otherTenant);
    const foreignCode = await codeOf(other, foreignCard, stranger.id);
    const cashback = await card(sys, tenant.tenantId, { reward_system: 'cashback' });
    const cases: [Record<string, unknown>, number, string][] = [
      [{ referral_code: code, card_id: pointsCard, referee_member_id: referrer.id }, 422, 'self_referral'],
      [
        { referral_code: 'ZZZZZZZZ', card_id: pointsCard, referee_member_id: referee.id },
        404,
        'referral_code_not_found',
      ],
      [
        { referral_code: foreignCode, card_id: pointsCard, referee_member_id: referee.id },
        404,
        'referral_code_not_found',
      ],
      [{ referral_code: code, card_id: pointsCard, referee_member_id: 999999 }, 404, 'member_not_found'],
      [{ referral_code: code, card_id: pointsCard, referee_member_id: stranger.id }, 404, 'member_not_found'],
      [{ referral_code: code, card_id: 999999, referee_member_id: referee.id }, 404, 'card_not_found'],
      [{ referral_code: code, card_id: foreignCard, referee_member_id: referee.id }, 404, 'card_not_found'],
      [{ referral_code: code, card_id: cashback, referee_member_id: referee.id }, 422, 'wrong_card_type'],
      [{ referral_code: code, card_id: pointsCard }, 400, 'validation_error'],
    ];
    for (const [body, status, errorCode] of cases) {
      const r = await apply(api, body as never);
      expect([r.status, (r.body.error as { code: string }).code], JSON.stringify(body)).toEqual([status, errorCode]);
    }
    expect(await balance(api, pointsCard, referrer.id)).toBe(0);
    expect(await balance(api, pointsCard, referee.id)).toBe(0);
    // Nothing was written: the referee can still be referred.
    expect((await apply(api, { referral_code: code, card_id: pointsCard, referee_member_id: referee.id })).status).toBe(
      200,
    );
  });

  it('needs the points_write scope', async () => {
    const r = await readOnly('POST', '/api/v1/loyalty/referrals/apply', {
      body: { referral_code: 'ZZZZZZZZ', card_id: pointsCard, referee_member_id: 1 },
    });
    expect(r.status).toBe(403);
    expect(r.body.error).toMatchObject({ code: 'insufficient_scope', required_scope: 'points_write' });
  });
});

describe('statistics, top referrers and referrals of a referrer', () => {
  let statsCard: number;
  const people: Record<string, { id: number; name: string; email: string }> = {};

  beforeAll(async () => {
    // Bonuses on first purchase: a referral stays pending until its referee earns points.
    statsCard = await card(sys, tenant.tenantId, {
      referrer_bonus: 30,
      referee_bonus: 20,
      referral_bonus_on_first_purchase: true,
    });
    for (const n of ['ann', 'bob', 'cat', 'r1', 'r2', 'r3', 'r4', 'r5']) people[n] = await member(api, `Person ${n}`);
    const ref = async (referrer: string, referee: string) => {
      const r = await apply(api, {
        referral_code: await codeOf(api, statsCard, people[referrer]!.id),
        card_id: statsCard,
        referee_member_id: people[referee]!.id,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    };
    // 40 days ago: ann -> r1; now: bob -> r2, r3; cat -> r4; ann -> r5. All but r5 make a purchase.
    await ref('ann', 'r1');
    sys.clock.advance(40 * DAY);
    await ref('bob', 'r2');
    await ref('bob', 'r3');
    await ref('cat', 'r4');
    await ref('ann', 'r5');
    for (const n of ['r1', 'r2', 'r3', 'r4']) await earn(api, statsCard, people[n]!.id, 10);
    await eventually(
      async () =>
        (await api('GET', `/api/v1/loyalty/cards/${statsCard}/referral-stats`)).body.data as {
          stats: { successful_referrals: number };
        },
      (d) => d.stats.successful_referrals === 4,
    );
  });

  it('counts total, successful and pending referrals with the conversion rate, per period', async () => {
    const stats = async (q: string) => (await api('GET', `/api/v1/loyalty/cards/${statsCard}/referral-stats${q}`)).body;
    expect(await stats('')).toEqual({
      success: true,
      data: {
        stats: { total_referrals: 5, successful_referrals: 4, pending_referrals: 1, conversion_rate: 80 },
        period: 'all',
      },
    });
    expect((await stats('?period=all')).data).toEqual((await stats('')).data);
    expect(await stats('?period=30d')).toEqual({
      success: true,
      data: {
        stats: { total_referrals: 4, successful_referrals: 3, pending_referrals: 1, conversion_rate: 75 },
        period: '30d',
      },
    });
    expect((await stats('?period=7d')).data!.stats).toEqual((await stats('?period=30d')).data!.stats);
    expect((await stats('?period=90d')).data!.stats).toMatchObject({ total_referrals: 5 });
    const empty = await card(sys, tenant.tenantId);
    expect((await api('GET', `/api/v1/loyalty/cards/${empty}/referral-stats`)).body.data).toEqual({
      stats: { total_referrals: 0, successful_referrals: 0, pending_referrals: 0, conversion_rate: 0 },
      period: 'all',
    });
  });

  it('ranks top referrers by successful referrals, then total, then member id, with masked emails', async () => {
    const r = await api('GET', `/api/v1/loyalty/cards/${statsCard}/referrers`);
    expect(r.status).toBe(200);
    const [ann, bob, cat] = [people.ann!, people.bob!, people.cat!];
    // bob 2/2, ann 1 successful of 2, cat 1/1: ann before cat on total.
    expect(r.body.data).toEqual({
      referrers: [
        {
          member_id: bob.id,
          name: bob.name,
          email: expect.stringContaining('***'),
          total_referrals: 2,
          successful_referrals: 2,
        },
        {
          member_id: ann.id,
          name: ann.name,
          email: expect.stringContaining('***'),
          total_referrals: 2,
          successful_referrals: 1,
        },
        {
          member_id: cat.id,
          name: cat.name,
          email: expect.stringContaining('***'),
          total_referrals: 1,
          successful_referrals: 1,
        },
      ],
      total: 3,
    });
    expectNoRawEmail(r.body, ann.email, bob.email, cat.email);
    const limited = await api('GET', `/api/v1/loyalty/cards/${statsCard}/referrers?limit=1`);
    expect(limited.body.data).toMatchObject({ referrers: [{ member_id: bob.id }], total: 3 });
    const week = await api('GET', `/api/v1/loyalty/cards/${statsCard}/referrers?period=7d`);
    expect(
      (week.body.data!.referrers as { member_id: number; total_referrals: number }[]).map((e) => [
        e.member_id,
        e.total_referrals,
      ]),
    ).toEqual([
      [bob.id, 2],
      [cat.id, 1],
      [ann.id, 1],
    ]);
  });

  it('ties on successful and total are ordered by member id', async () => {
    const tieCard = await card(sys, tenant.tenantId);
    const [x, y, e1, e2] = [await member(api), await member(api), await member(api), await member(api)];
    // y refers first, but x has the lower id.
    await apply(api, { referral_code: await codeOf(api, tieCard, y.id), card_id: tieCard, referee_member_id: e1.id });
    await apply(api, { referral_code: await codeOf(api, tieCard, x.id), card_id: tieCard, referee_member_id: e2.id });
    const r = await api('GET', `/api/v1/loyalty/cards/${tieCard}/referrers`);
    expect((r.body.data!.referrers as { member_id: number }[]).map((e) => e.member_id)).toEqual([
      Math.min(x.id, y.id),
      Math.max(x.id, y.id),
    ]);
  });

  it('validates period and limit', async () => {
    const cases = [
      [`/api/v1/loyalty/cards/${statsCard}/referral-stats?period=1y`, 'period'],
      [`/api/v1/loyalty/cards/${statsCard}/referrers?period=week`, 'period'],
      [`/api/v1/loyalty/cards/${statsCard}/referrers?limit=101`, 'limit'],
      [`/api/v1/loyalty/cards/${statsCard}/referrers?limit=0`, 'limit'],
    ];
    for (const [path, field] of cases) {
      const r = await api('GET', path!);
      expect(r.status, path).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'validation_error', fields: [{ field }] });
    }
    expect((await api('GET', `/api/v1/loyalty/cards/${statsCard}/referrers?limit=100`)).status).toBe(200);
  });

  it("lists a referrer's referrals newest first with referee name, masked email, status and bonus", async () => {
    const ann = people.ann!;
    const r = await api('GET', `/api/v1/loyalty/cards/${statsCard}/referrers/${ann.id}/referrals`);
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      referrals: [
        {
          id: expect.any(Number),
          referee_name: people.r5!.name,
          referee_email: expect.stringContaining('***'),
          status: 'pending',
          bonus_points: 30,
          created_at: expect.any(String),
        },
        {
          id: expect.any(Number),
          referee_name: people.r1!.name,
          referee_email: expect.stringContaining('***'),
          status: 'completed',
          bonus_points: 30,
          created_at: expect.any(String),
        },
      ],
      total: 2,
    });
    expectNoRawEmail(r.body, people.r1!.email, people.r5!.email);
    const page = await api('GET', `/api/v1/loyalty/cards/${statsCard}/referrers/${ann.id}/referrals?limit=1&offset=1`);
    expect(page.body.data).toMatchObject({ referrals: [{ referee_name: people.r1!.name }], total: 2 });
    const none = await api('GET', `/api/v1/loyalty/cards/${statsCard}/referrers/${people.r1!.id}/referrals`);
    expect(none.body.data).toEqual({ referrals: [], total: 0 });
  });

  it('answers 404 for an unknown or foreign card or referrer, 422 for a cashback card, and needs points_read', async () => {
    const stranger = await member(other);
    const foreignCard = await card(sys, otherTenant);
    const cashback = await card(sys, tenant.tenantId, { reward_system: 'cashback' });
    const cases: [string, number, string][] = [
      [`/api/v1/loyalty/cards/999999/referral-stats`, 404, 'card_not_found'],
      [`/api/v1/loyalty/cards/${foreignCard}/referral-stats`, 404, 'card_not_found'],
      [`/api/v1/loyalty/cards/${foreignCard}/referrers`, 404, 'card_not_found'],
      [`/api/v1/loyalty/cards/${cashback}/referrers`, 422, 'wrong_card_type'],
      [`/api/v1/loyalty/cards/${foreignCard}/referrers/${stranger.id}/referrals`, 404, 'card_not_found'],
      [`/api/v1/loyalty/cards/${statsCard}/referrers/${stranger.id}/referrals`, 404, 'member_not_found'],
      [`/api/v1/loyalty/cards/${statsCard}/referrers/999999/referrals`, 404, 'member_not_found'],
    ];
    for (const [path, status, code] of cases) {
      const r = await api('GET', path);
      expect([r.status, (r.body.error as { code: string }).code], path).toEqual([status, code]);
    }
    for (const path of [
      `/api/v1/loyalty/cards/${statsCard}/referral-stats`,
      `/api/v1/loyalty/cards/${statsCard}/referrers`,
      `/api/v1/loyalty/cards/${statsCard}/referrers/1/referrals`,
    ]) {
      expect((await readOnly('GET', path)).status, path).toBe(403);
    }
  });
});
