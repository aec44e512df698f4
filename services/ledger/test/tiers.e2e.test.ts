import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn } from '../../../test/support/staff.ts';
import { apiClient, staffClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { randomUUID } from 'node:crypto';
import type { RunningLedger } from '../src/service.ts';
import { postingStatement, postMany } from '../src/store/accounts.ts';
import { cashbackCard, email, pointsCard, type Api } from './support.ts';

/**
 * Tiers end to end through the gateway, on the injectable clock: the ladder (scope, validation,
 * audit, operator API), the upgrade decided by the crossing earn, concurrent crossings, refunds
 * that lower the total without a downgrade, the member's progress, manual tiers, tier rules, and
 * answers unchanged on cards without tiers.
 */
let sys: TestSystem;
let api: Api;
let readOnly: Api;
let tenantId: number;
const PTS = '/api/v1/loyalty/points';
const ALL = ['points_read', 'points_write', 'cashback_read', 'cashback_write', 'card_read', 'programme_manage'];
type Body = Record<string, unknown>;

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger'] });
  const t = await sys.tenant({ scopes: ALL });
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
  readOnly = apiClient(sys.url, await sys.tenant({ scopes: ['points_read', 'card_read'] }));
});
afterAll(async () => {
  await sys?.stop();
});

const tiersOf = (card: number) => `/api/v1/loyalty/cards/${card}/tiers`;
const tierOf = (card: number, member: number) => `/api/v1/loyalty/cards/${card}/members/${member}/tier`;

const LADDER = [
  { name: 'Bronze', rank: 0, entry_threshold: 0, retain_threshold: 0 },
  { name: 'Silver', rank: 1, entry_threshold: 100, retain_threshold: 80, description: 'Better' },
  { name: 'Gold', rank: 2, entry_threshold: 500, retain_threshold: 400 },
];

async function withTiers(card: number, body: Body = {}) {
  const r = await api('PUT', tiersOf(card), { body: { tiers: LADDER, ...body } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data as Body;
}

async function earn(card: number, body: Body, status = 200) {
  const r = await api('POST', `${PTS}/earn`, { body: { card_id: card, ...body } });
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body.data as Body & { member_id: number; tier?: Body };
}

function setClock(iso: string): void {
  sys.clock.advance(Date.parse(iso) - sys.clock.now().getTime());
}

describe('the ladder', () => {
  it('needs programme_manage, validates with field paths (422) and stores nothing bad', async () => {
    const card = await pointsCard(sys, tenantId);
    expect((await readOnly('GET', tiersOf(card))).status).toBe(403);
    const empty = await api('GET', tiersOf(card));
    expect(empty.status).toBe(200);
    expect(empty.body.data).toMatchObject({
      enabled: false,
      tiers: [],
      version: 0,
      window: 'rolling',
      window_days: 365,
    });
    const bad = async (body: Body, field: string) => {
      const r = await api('PUT', tiersOf(card), { body: { tiers: LADDER, ...body } });
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      expect(r.body.error).toMatchObject({ code: 'invalid_tiers' });
      expect((r.body.error as { fields: { field: string }[] }).fields.map((f) => f.field)).toContain(field);
    };
    await bad({ metric: 'visits' }, 'metric');
    await bad({ window: 'weekly' }, 'window');
    await bad({ window_days: 0 }, 'window_days');
    await bad({ warning_days: 1.5 }, 'warning_days');
    await bad({ validity_days: -3 }, 'validity_days');
    await bad({ tiers: [LADDER[0], { ...LADDER[1], rank: 0 }] }, 'tiers[1].rank');
    await bad(
      { tiers: [{ ...LADDER[0], entry_threshold: 5, retain_threshold: 0 }, LADDER[1]] },
      'tiers[0].entry_threshold',
    );
    await bad({ tiers: [LADDER[0], { ...LADDER[1], retain_threshold: 101 }] }, 'tiers[1].retain_threshold');
    await bad({ tiers: [LADDER[0], { ...LADDER[1], entry_threshold: 10.5 }] }, 'tiers[1].entry_threshold');
    await bad({ tiers: [LADDER[0], { ...LADDER[1], name: 'bronze' }] }, 'tiers[1].name');
    await bad(
      {
        tiers: Array.from({ length: 11 }, (_, i) => ({
          name: `T${i}`,
          rank: i,
          entry_threshold: i,
          retain_threshold: 0,
        })),
      },
      'tiers',
    );
    const wrongType = await api('PUT', tiersOf(card), { body: { tiers: 'gold' } });
    expect(wrongType.status).toBe(400);
    expect((await api('GET', tiersOf(card))).body.data).toMatchObject({ enabled: false, version: 0 });
  });

  it('is set as a whole, audited, read back with members per tier, and shared with the operator API', async () => {
    const card = await pointsCard(sys, tenantId);
    const set = await withTiers(card, { window: 'calendar_year', warning_days: 10 });
    expect(set).toMatchObject({
      card_id: card,
      enabled: true,
      metric: 'points_earned',
      count_bonuses: true,
      window: 'calendar_year',
      warning_days: 10,
      validity_days: null,
      version: 1,
    });
    expect((set.tiers as Body[]).map((t) => t.name)).toEqual(['Bronze', 'Silver', 'Gold']);
    expect((set.tiers as Body[])[1]).toMatchObject({
      entry_threshold: 100,
      retain_threshold: 80,
      description: 'Better',
    });
    const viaOperator = await sys.admin<Body>('GET', `/admin/v1/tenants/${tenantId}/cards/${card}/tiers`);
    expect(viaOperator).toMatchObject({ version: 1, window: 'calendar_year' });
    await sys.admin('PUT', `/admin/v1/tenants/${tenantId}/cards/${card}/tiers`, { tiers: LADDER });
    expect((await api('GET', tiersOf(card))).body.data).toMatchObject({ version: 2, window: 'rolling' });
    const { rows } = await sys.db.query<{ action: string; actor: string }>(
      `SELECT payload -> 'data' ->> 'action' AS action, payload -> 'data' -> 'actor' ->> 'type' AS actor
         FROM ledger.outbox WHERE subject LIKE '%audit_recorded' AND payload -> 'data' -> 'target' ->> 'card_id' = $1
          AND payload -> 'data' ->> 'action' LIKE 'tiers.%' ORDER BY created_at`,
      [String(card)],
    );
    expect(rows).toEqual([
      { action: 'tiers.updated', actor: 'app' },
      { action: 'tiers.updated', actor: 'operator' },
    ]);
  });
});

describe('qualification', () => {
  it('leaves answers as they were on cards without tiers', async () => {
    const card = await pointsCard(sys, tenantId);
    const e = await earn(card, { email: email('plain'), purchase_amount: 10 });
    expect(e).not.toHaveProperty('tier');
    const b = await api('GET', `${PTS}/balance?card_id=${card}&member_id=${e.member_id}`);
    expect(b.body.data).not.toHaveProperty('tier');
    const t = await api('GET', tierOf(card, e.member_id));
    expect(t.status).toBe(404);
    expect(t.body.error).toMatchObject({ code: 'tiers_not_configured' });
  });

  it('upgrades in the crossing earn, shows progress, and a refund lowers the total without a downgrade', async () => {
    setClock('2026-03-10T12:00:00Z');
    const card = await pointsCard(sys, tenantId);
    await withTiers(card, { window: 'rolling', window_days: 30 });
    const who = email('climber');
    const first = await earn(card, { email: who, purchase_amount: 60, reference: 'a1' });
    expect(first.tier).toEqual({ name: 'Bronze', rank: 0, valid_until: null, upgraded: false });
    const member = first.member_id;
    const progress = await api('GET', tierOf(card, member));
    expect(progress.body.data).toMatchObject({
      tier: { name: 'Bronze', rank: 0 },
      qualifying_total: 60,
      window_start: '2026-02-09',
      window_end: '2026-03-11',
      next_tier: { name: 'Silver', entry_threshold: 100 },
      needed_for_next: 40,
      needed_to_retain: null,
      valid_until: null,
    });
    const crossing = await earn(card, { member_id: member, purchase_amount: 45, reference: 'a2' });
    // Upgraded on 2026-03-10: held to the end of the next full 30-day window.
    expect(crossing.tier).toEqual({ name: 'Silver', rank: 1, valid_until: '2026-04-10T00:00:00.000Z', upgraded: true });
    const again = await earn(card, { member_id: member, purchase_amount: 1 });
    expect(again.tier).toMatchObject({ name: 'Silver', upgraded: false });
    const balance = await api('GET', `${PTS}/balance?card_id=${card}&member_id=${member}`);
    expect(balance.body.data).toMatchObject({
      tier: { name: 'Silver', rank: 1, valid_until: '2026-04-10T00:00:00.000Z' },
    });
    const refund = await api('POST', `${PTS}/refund`, {
      body: { card_id: card, member_id: member, refund_amount: 45, reference: 'a2' },
    });
    expect(refund.status, JSON.stringify(refund.body)).toBe(200);
    const after = await api('GET', tierOf(card, member));
    expect(after.body.data).toMatchObject({
      tier: { name: 'Silver' },
      qualifying_total: 61,
      needed_for_next: 439,
      // Reviewed on 2026-04-10 on the 30 days before it, which hold nothing yet.
      needed_to_retain: 80,
    });
    const events = await sys.db.query<{ id: string; subject: string; payload: Body }>(
      `SELECT id, subject, payload FROM ledger.outbox WHERE subject LIKE '%.tier_upgraded' AND payload -> 'data' ->> 'card_id' = $1`,
      [String(card)],
    );
    // The posting statement writes the event itself: an envelope like every other event's.
    expect(events.rows).toHaveLength(1);
    const [upgraded] = events.rows;
    expect(upgraded!.subject).toMatch(/\.events\.ledger\.tier_upgraded$/);
    const posted = await sys.db.query<{ created_at: Date }>('SELECT created_at FROM ledger.journal WHERE id = $1', [
      crossing.transaction_id,
    ]);
    expect(upgraded!.payload).toEqual({
      id: upgraded!.id,
      type: 'ledger.tier_upgraded',
      tenant_id: tenantId,
      occurred_at: posted.rows[0]!.created_at.toISOString(),
      data: {
        member_id: member,
        card_id: card,
        from: 'Bronze',
        to: 'Silver',
        from_rank: 0,
        to_rank: 1,
        valid_until: '2026-04-10T00:00:00.000Z',
        reason: 'qualified',
        transaction_id: crossing.transaction_id,
      },
    });
  });

  it('writes one upgrade event of its own for each member a single posting statement upgrades', async () => {
    // Concurrent earns share a posting statement (the ledger's group commit): each upgrade it
    // decides is an event with an id of its own.
    setClock('2026-03-12T10:00:00Z');
    const card = await pointsCard(sys, tenantId);
    await withTiers(card);
    const members = [
      (await earn(card, { email: email('batch-a'), purchase_amount: 5 })).member_id,
      (await earn(card, { email: email('batch-b'), purchase_amount: 5 })).member_id,
    ];
    const at = sys.clock.now();
    // On a connection of its own, with the events kept in a table no relay reads.
    const db = await sys.db.connect();
    try {
      await db.query('CREATE TEMP TABLE tier_outbox (LIKE ledger.outbox INCLUDING ALL)');
      const statement = { name: 'test.tier_batch', text: postingStatement('credit', 'pg_temp.tier_outbox') };
      const postings = members.map((memberId) => {
        const id = randomUUID();
        return {
          account: { tenantId, cardId: card, memberId },
          movement: {
            event: 'staff_added_points' as const,
            amount: 200,
            at,
            tier: {
              delta: 200,
              day: '2026-03-12',
              window: 'rolling',
              windowDays: 365,
              validityDays: null,
              warningDays: 30,
              timeZone: 'UTC',
              lowest: 0,
              upgrade: { subject: 'test.tier_upgraded', type: 'ledger.tier_upgraded' },
            },
          },
          event: {
            id,
            subject: 'test.points_earned',
            envelope: {
              id,
              type: 'ledger.points_earned',
              tenant_id: tenantId,
              occurred_at: at.toISOString(),
              data: {},
            },
            trace: null,
            unit: 'points' as const,
          },
        };
      });
      const posted = await postMany(db, 'credit', postings, statement);
      expect(posted.map((p) => p?.tier)).toEqual([
        expect.objectContaining({ rank: 1, prevRank: 0 }),
        expect.objectContaining({ rank: 1, prevRank: 0 }),
      ]);
      const { rows } = await db.query<{ id: string; payload: Body }>(
        `SELECT id, payload FROM pg_temp.tier_outbox WHERE subject = 'test.tier_upgraded'`,
      );
      expect(new Set(rows.map((r) => r.id)).size).toBe(2);
      for (const r of rows) expect(r.payload.id).toBe(r.id);
      expect(rows.map((r) => (r.payload.data as Body).member_id).sort()).toEqual([...members].sort());
    } finally {
      await db.query('DROP TABLE IF EXISTS pg_temp.tier_outbox');
      db.release();
    }
  });

  it('upgrades once when concurrent earns cross the same threshold', async () => {
    const card = await pointsCard(sys, tenantId);
    await withTiers(card);
    const first = await earn(card, { email: email('racer'), purchase_amount: 90 });
    const member = first.member_id;
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => earn(card, { member_id: member, purchase_amount: 10 })),
    );
    expect(answers.filter((a) => a.tier?.upgraded)).toHaveLength(1);
    expect(answers.every((a) => a.tier?.name === 'Silver')).toBe(true);
    const { rows } = await sys.db.query(
      `SELECT 1 FROM ledger.outbox WHERE subject LIKE '%.tier_upgraded' AND payload -> 'data' ->> 'member_id' = $1`,
      [String(member)],
    );
    expect(rows).toHaveLength(1);
    const progress = await api('GET', tierOf(card, member));
    expect(progress.body.data).toMatchObject({ qualifying_total: 210 });
  });

  it('counts amount spent on a cashback card, in currency units', async () => {
    const card = await cashbackCard(sys, tenantId);
    const r = await api('PUT', tiersOf(card), {
      body: {
        metric: 'amount_spent',
        tiers: [
          { name: 'Member', rank: 1, entry_threshold: 0, retain_threshold: 0 },
          { name: 'VIP', rank: 5, entry_threshold: 99.99, retain_threshold: 50.5 },
        ],
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const e1 = (
      await api('POST', '/api/v1/cashback/cashback/earn', {
        body: { card_id: card, email: email('spender'), purchase_amount: 99.98 },
      })
    ).body.data as Body & { member_id: number };
    expect(e1.tier).toMatchObject({ name: 'Member', upgraded: false });
    const e2 = (
      await api('POST', '/api/v1/cashback/cashback/earn', {
        body: { card_id: card, member_id: e1.member_id, purchase_amount: 0.01 },
      })
    ).body.data as Body;
    expect(e2.tier).toMatchObject({ name: 'VIP', rank: 5, upgraded: true });
    const progress = await api('GET', tierOf(card, e1.member_id));
    expect(progress.body.data).toMatchObject({ qualifying_total: 99.99, next_tier: null, needed_for_next: null });
  });

  it('gives a tier its multiplier through an earning rule with a tier condition', async () => {
    const card = await pointsCard(sys, tenantId);
    await withTiers(card);
    const rule = await api('POST', `/api/v1/loyalty/cards/${card}/rules`, {
      body: {
        name: 'Silver double',
        kind: 'multiplier',
        factor: 2,
        status: 'active',
        conditions: { tiers: ['Silver'] },
      },
    });
    expect(rule.status, JSON.stringify(rule.body)).toBe(200);
    const first = await earn(card, { email: email('mult'), purchase_amount: 100 });
    // The crossing earn is evaluated at the tier the member held before it.
    expect(first).toMatchObject({ points_earned: 100, tier: { name: 'Silver', upgraded: true } });
    const second = await earn(card, { member_id: first.member_id, purchase_amount: 10 });
    expect(second).toMatchObject({ points_earned: 20, tier: { name: 'Silver' } });
    expect(second.rules_applied).toEqual([expect.objectContaining({ name: 'Silver double', points: 10 })]);
  });

  it("quotes a member the earn would create at the lowest tier, as the earn gives (the lowest tier's rule)", async () => {
    const card = await pointsCard(sys, tenantId);
    await withTiers(card);
    for (const rule of [
      { name: 'Welcome at Bronze', kind: 'fixed', points: 5, conditions: { tiers: ['Bronze'] } },
      {
        name: 'Bronze capped',
        kind: 'fixed',
        points: 3,
        conditions: { tiers: ['Bronze'] },
        cap: { limit: 100, period: 'day' },
      },
    ]) {
      const r = await api('POST', `/api/v1/loyalty/cards/${card}/rules`, { body: { ...rule, status: 'active' } });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    const newcomer = email('quote-new');
    const quote = await api('POST', `${PTS}/quote`, {
      body: { operation: 'earn', card_id: card, email: newcomer, purchase_amount: 10 },
    });
    expect(quote.status, JSON.stringify(quote.body)).toBe(200);
    const earned = await earn(card, { email: newcomer, purchase_amount: 10 });
    expect(earned.points_earned).toBe(18);
    expect(quote.body.data).toMatchObject({ is_new_member: true, points: earned.points_earned });
  });

  it('evaluates a tier rule with the tier the member holds, also when it changed without an earn of this replica', async () => {
    // The ledger remembers the rank a member's last earn answered and posts with it; the posting
    // refuses a rank the member no longer holds, and the earn is evaluated again with the one found.
    setClock('2026-05-01T09:00:00Z');
    const card = await pointsCard(sys, tenantId);
    await withTiers(card);
    const rule = await api('POST', `/api/v1/loyalty/cards/${card}/rules`, {
      body: { name: 'Gold triple', kind: 'multiplier', factor: 3, status: 'active', conditions: { tiers: ['Gold'] } },
    });
    expect(rule.status, JSON.stringify(rule.body)).toBe(200);
    const first = await earn(card, { email: email('stale-rank'), purchase_amount: 5 });
    expect(first).toMatchObject({ points_earned: 5, tier: { name: 'Bronze' } });
    const member = first.member_id;
    // Set by hand: no earn answered it, so the ledger still remembers Bronze.
    await sys.admin('PUT', `/admin/v1/tenants/${tenantId}/cards/${card}/members/${member}/tier`, {
      tier: 'gold',
      valid_until: '2026-08-01T00:00:00Z',
      reason: 'Press partner',
    });
    const gold = await earn(card, { member_id: member, purchase_amount: 10 });
    expect(gold).toMatchObject({ points_earned: 30, tier: { name: 'Gold' } });
    expect(gold.rules_applied).toEqual([expect.objectContaining({ name: 'Gold triple', points: 20 })]);
    // Another replica's review ends the tier: the ledger here remembers Gold.
    await sys.db.query(
      'UPDATE ledger.member_tiers SET rank = 0, valid_until = NULL, manual_reason = NULL WHERE card_id = $1 AND member_id = $2',
      [card, member],
    );
    const keyed = { card_id: card, member_id: member, purchase_amount: 10 };
    const headers = { 'idempotency-key': `stale-rank-${card}` };
    const bronze = await api('POST', `${PTS}/earn`, { body: keyed, headers });
    expect(bronze.status, JSON.stringify(bronze.body)).toBe(200);
    expect(bronze.body.data).toMatchObject({ points_earned: 10, tier: { name: 'Bronze' } });
    expect(bronze.body.data?.rules_applied).toBeUndefined();
    const again = await api('POST', `${PTS}/earn`, { body: keyed, headers });
    expect(again.body.data).toEqual(bronze.body.data);
    // Each earn wrote once: three journal rows, and the balance is their sum.
    const { rows } = await sys.db.query<{ n: number; total: string }>(
      'SELECT count(*)::int AS n, sum(amount)::text AS total FROM ledger.journal WHERE card_id = $1 AND member_id = $2',
      [card, member],
    );
    expect(rows[0]).toEqual({ n: 3, total: '45' });
  });

  it('lets the operator set a tier by hand with an expiry and a reason (audited)', async () => {
    setClock('2026-05-01T09:00:00Z');
    const card = await pointsCard(sys, tenantId);
    await withTiers(card);
    const e = await earn(card, { email: email('vip'), purchase_amount: 5 });
    const path = `/admin/v1/tenants/${tenantId}/cards/${card}/members/${e.member_id}/tier`;
    const set = await sys.admin<Body>('PUT', path, {
      tier: 'gold',
      valid_until: '2026-08-01T00:00:00Z',
      reason: 'Press partner',
    });
    expect(set).toMatchObject({
      tier: { name: 'Gold', rank: 2 },
      valid_until: '2026-08-01T00:00:00.000Z',
      manual: { reason: 'Press partner' },
      qualifying_total: 5,
      needed_to_retain: 395,
    });
    const b = await api('GET', `${PTS}/balance?card_id=${card}&member_id=${e.member_id}`);
    expect(b.body.data).toMatchObject({ tier: { name: 'Gold', valid_until: '2026-08-01T00:00:00.000Z' } });
    const next = await earn(card, { member_id: e.member_id, purchase_amount: 200 });
    expect(next.tier).toMatchObject({ name: 'Gold', upgraded: false });
    const { rows } = await sys.db.query<{ action: string }>(
      `SELECT payload -> 'data' ->> 'action' AS action FROM ledger.outbox
        WHERE subject LIKE '%audit_recorded' AND payload -> 'data' -> 'target' ->> 'member_id' = $1`,
      [String(e.member_id)],
    );
    expect(rows.map((r) => r.action)).toEqual(['tier.set']);
  });
});

describe('reviews at the end of validity', () => {
  const ledger = () => sys.services.ledger as RunningLedger;
  const eventsOf = async (type: string, card: number) =>
    (
      await sys.db.query<{ data: Body }>(
        `SELECT payload -> 'data' AS data FROM ledger.outbox WHERE subject LIKE $1 AND payload -> 'data' ->> 'card_id' = $2
          ORDER BY created_at`,
        [`%.${type}`, String(card)],
      )
    ).rows.map((r) => r.data);

  it('warns before a downgrade (and mails it), downgrades at the period end, renews who kept the threshold, once', async () => {
    setClock('2026-06-01T12:00:00Z');
    const card = await pointsCard(sys, tenantId);
    await withTiers(card, { window: 'rolling', window_days: 30, warning_days: 10 });
    const slipping = email('slipping');
    const a = await earn(card, { email: slipping, purchase_amount: 120 });
    const b = await earn(card, { email: email('keeper'), purchase_amount: 150 });
    expect(a.tier).toMatchObject({ name: 'Silver', valid_until: '2026-07-02T00:00:00.000Z', upgraded: true });
    setClock('2026-06-20T12:00:00Z');
    await earn(card, { member_id: b.member_id, purchase_amount: 90 });
    expect((await ledger().hooks.sweepTiers()).warned).toBe(0);
    setClock('2026-06-23T08:00:00Z');
    const warned = await ledger().hooks.sweepTiers();
    expect(warned.warned).toBe(1);
    expect(await eventsOf('tier_downgrade_warning', card)).toEqual([
      expect.objectContaining({
        member_id: a.member_id,
        from: 'Silver',
        to: 'Bronze',
        valid_until: '2026-07-02T00:00:00.000Z',
        points_needed_to_retain: 80,
        time_zone: 'UTC', // the card's: the mail tells the review's day in it
      }),
    ]);
    const mail = await sys.mail.waitFor(slipping, (m) => m.subject.includes('Silver'));
    expect(mail.text).toContain('80 more points');
    expect(mail.text).toContain('July 2, 2026');
    expect((await ledger().hooks.sweepTiers()).warned).toBe(0);
    setClock('2026-07-02T00:00:01Z');
    const reviewed = await ledger().hooks.sweepTiers();
    expect(reviewed).toMatchObject({ renewed: 1, downgraded: 1 });
    expect(await eventsOf('tier_downgraded', card)).toEqual([
      expect.objectContaining({
        member_id: a.member_id,
        from: 'Silver',
        to: 'Bronze',
        valid_until: null,
        reason: 'review',
      }),
    ]);
    expect(await eventsOf('tier_renewed', card)).toEqual([
      expect.objectContaining({
        member_id: b.member_id,
        from: 'Silver',
        to: 'Silver',
        valid_until: '2026-08-01T00:00:00.000Z',
        qualifying_total: 90,
      }),
    ]);
    expect(await ledger().hooks.sweepTiers()).toEqual({ renewed: 0, downgraded: 0, warned: 0 });
    const after = await api('GET', tierOf(card, a.member_id));
    expect(after.body.data).toMatchObject({ tier: { name: 'Bronze' }, valid_until: null });
  });

  it('reviews a tier set by hand when it ends, like any other', async () => {
    setClock('2026-09-01T10:00:00Z');
    const card = await pointsCard(sys, tenantId);
    await withTiers(card);
    const e = await earn(card, { email: email('guest'), purchase_amount: 90 });
    await sys.admin('PUT', `/admin/v1/tenants/${tenantId}/cards/${card}/members/${e.member_id}/tier`, {
      tier: 'Gold',
      valid_until: '2026-09-15T00:00:00Z',
      reason: 'Trial',
    });
    setClock('2026-09-15T00:00:01Z');
    expect((await ledger().hooks.sweepTiers()).downgraded).toBeGreaterThanOrEqual(1);
    expect(await eventsOf('tier_downgraded', card)).toEqual([
      expect.objectContaining({ member_id: e.member_id, from: 'Gold', to: 'Silver', reason: 'review' }),
    ]);
    // 90 in the year before meets Silver's retain threshold (80), not Gold's (400).
    const after = await api('GET', tierOf(card, e.member_id));
    expect(after.body.data).toMatchObject({ tier: { name: 'Silver' }, manual: null });
  });
});

describe('recomputing a card after a ladder change', () => {
  async function finished(jobId: string): Promise<Body> {
    for (let i = 0; i < 200; i++) {
      const r = await api('GET', `/api/v1/jobs/${jobId}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const job = r.body.data as Body;
      if (job.status === 'succeeded' || job.status === 'failed') return job;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`job ${jobId} did not finish`);
  }

  it('qualifies every member from the journal in a job, upgrading at once and never downgrading early', async () => {
    setClock('2026-10-01T10:00:00Z');
    const card = await pointsCard(sys, tenantId);
    const big = await earn(card, { email: email('big'), purchase_amount: 600 });
    const mid = await earn(card, { email: email('mid'), purchase_amount: 150 });
    const small = await earn(card, { email: email('small'), purchase_amount: 10 });
    const refunded = await api('POST', `${PTS}/refund`, {
      body: { card_id: card, member_id: mid.member_id, refund_amount: 20 },
    });
    expect(refunded.status, JSON.stringify(refunded.body)).toBe(200);
    const set = await withTiers(card);
    expect(set.recompute_job_id).toMatch(/^job_ledger_/);
    expect(await finished(String(set.recompute_job_id))).toMatchObject({
      kind: 'tiers.recompute',
      status: 'succeeded',
      progress: { done: 3, total: 3 },
    });
    const tierName = async (member: number) =>
      (await api('GET', tierOf(card, member))).body.data as { tier: { name: string }; qualifying_total: number };
    expect(await tierName(big.member_id)).toMatchObject({ tier: { name: 'Gold' }, qualifying_total: 600 });
    expect(await tierName(mid.member_id)).toMatchObject({ tier: { name: 'Silver' }, qualifying_total: 130 });
    expect(await tierName(small.member_id)).toMatchObject({ tier: { name: 'Bronze' }, qualifying_total: 10 });
    const upgrades = await sys.db.query<{ reason: string }>(
      `SELECT payload -> 'data' ->> 'reason' AS reason FROM ledger.outbox
        WHERE subject LIKE '%.tier_upgraded' AND payload -> 'data' ->> 'card_id' = $1`,
      [String(card)],
    );
    expect(upgrades.rows).toEqual([{ reason: 'recompute' }, { reason: 'recompute' }]);
    const stats = (await api('GET', tiersOf(card))).body.data as { tiers: { name: string; members: number }[] };
    expect(stats.tiers.map((t) => [t.name, t.members])).toEqual([
      ['Bronze', 1],
      ['Silver', 1],
      ['Gold', 1],
    ]);
    // Names and descriptions only: nothing to recompute.
    const renamed = await withTiers(card, {
      tiers: LADDER.map((t) => (t.rank === 2 ? { ...t, name: 'Platinum' } : t)),
    });
    expect(renamed.recompute_job_id).toBeNull();
    // A member whose purchase was refunded in full the same day: a qualifying day of 0 until a recompute.
    const zero = await earn(card, { email: email('zero'), purchase_amount: 40 });
    const undone = await api('POST', `${PTS}/refund`, {
      body: { card_id: card, member_id: zero.member_id, refund_amount: 40 },
    });
    expect(undone.status, JSON.stringify(undone.body)).toBe(200);
    // A stricter metric: amount spent over 1,000 for the top tier. Nobody moves down before a review.
    const stricter = await withTiers(card, {
      metric: 'amount_spent',
      tiers: [
        LADDER[0],
        { ...LADDER[1], entry_threshold: 1000, retain_threshold: 900 },
        { ...LADDER[2], entry_threshold: 5000, retain_threshold: 4000 },
      ],
    });
    expect(await finished(String(stricter.recompute_job_id))).toMatchObject({ status: 'succeeded' });
    expect(await tierName(big.member_id)).toMatchObject({ tier: { name: 'Gold' }, qualifying_total: 600 });
    expect(await tierName(small.member_id)).toMatchObject({ tier: { name: 'Bronze' } });
    // The days were rebuilt in the new unit (cents spent): changed days rewritten, the day of 0 gone.
    const days = await sys.db.query<{ member_id: string; amount: string }>(
      'SELECT member_id, amount FROM ledger.tier_days WHERE card_id = $1 ORDER BY amount DESC',
      [card],
    );
    expect(days.rows.map((r) => [Number(r.member_id), Number(r.amount)])).toEqual([
      [big.member_id, 60000],
      [mid.member_id, 13000],
      [small.member_id, 1000],
    ]);
  });
});

describe('the staff API', () => {
  it('lets staff read tiers and managers set the ladder and a tier by hand (audited as the staff user)', async () => {
    const card = await pointsCard(sys, tenantId);
    await sys.admin('POST', `/admin/v1/tenants/${tenantId}/staff`, { email: 'tier-boss@example.com', role: 'manager' });
    await sys.admin('POST', `/admin/v1/tenants/${tenantId}/staff`, { email: 'tier-clerk@example.com', role: 'staff' });
    const staff = staffClient(sys.url);
    const boss = await signIn(staff, tenantId, 'tier-boss@example.com');
    const clerk = await signIn(staff, tenantId, 'tier-clerk@example.com');
    const put = await staff('PUT', `/staff/v1/cards/${card}/tiers`, { token: boss, body: { tiers: LADDER } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(
      (await staff('PUT', `/staff/v1/cards/${card}/tiers`, { token: clerk, body: { tiers: LADDER } })).status,
    ).toBe(403);
    const e = await earn(card, { email: email('staffed'), purchase_amount: 30 });
    const read = await staff('GET', `/staff/v1/cards/${card}/members/${e.member_id}/tier`, { token: clerk });
    expect(read.body.data).toMatchObject({ tier: { name: 'Bronze' }, needed_for_next: 70 });
    const body = { tier: 'Silver', valid_until: '2099-01-01T00:00:00Z', reason: 'Loyal regular' };
    const path = `/staff/v1/cards/${card}/members/${e.member_id}/tier`;
    expect((await staff('PUT', path, { token: clerk, body })).status).toBe(403);
    const set = await staff('PUT', path, { token: boss, body });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.data).toMatchObject({ tier: { name: 'Silver' }, manual: { reason: 'Loyal regular' } });
    const unknown = await staff('PUT', path, { token: boss, body: { ...body, tier: 'Diamond' } });
    expect(unknown.body.error).toMatchObject({ code: 'tier_not_found' });
    const past = await staff('PUT', path, { token: boss, body: { ...body, valid_until: '2001-01-01T00:00:00Z' } });
    expect(past.status).toBe(422);
    for (const [at, message] of [
      ['2099-02-30T00:00:00Z', 'has day 30 of February 2099, which has 28 days'],
      [
        '+275760-09-13T00:00:00Z',
        'must be an ISO 8601 date (2024-03-01) or time (2024-03-01T10:00:00Z); years run from 0001 to 9999',
      ],
      // Without its offset a time was read in the server's own time zone.
      [
        '2099-01-01T00:00:00',
        'must be an ISO 8601 date (2024-03-01) or time (2024-03-01T10:00:00Z) with its offset (Z or +01:00)',
      ],
    ]) {
      const impossible = await staff('PUT', path, { token: boss, body: { ...body, valid_until: at } });
      expect(impossible.status, at).toBe(422);
      expect(impossible.body.error).toMatchObject({
        code: 'invalid_tiers',
        fields: [{ field: 'valid_until', message }],
      });
    }
    const { rows } = await sys.db.query<{ actor: string }>(
      `SELECT payload -> 'data' -> 'actor' ->> 'email' AS actor FROM ledger.outbox
        WHERE subject LIKE '%audit_recorded' AND payload -> 'data' ->> 'action' = 'tier.set'
          AND payload -> 'data' -> 'target' ->> 'member_id' = $1`,
      [String(e.member_id)],
    );
    expect(rows).toEqual([{ actor: 'tier-boss@example.com' }]);
  });
});
