import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn } from '../../../test/support/staff.ts';
import {
  apiClient,
  OPERATOR_TOKEN,
  staffClient,
  startTestSystem,
  type TestSystem,
} from '../../../test/support/system.ts';
import { cashbackCard, email, lotsAgree, pointsCard, type Api } from './support.ts';

/**
 * Earning rules end to end through the gateway: management (scope, validation, lifecycle,
 * versions, audit), every kind and condition on real earns, time zones on the injectable clock (a
 * DST change, a weekday boundary at local midnight), caps and budgets under 50 concurrent earns,
 * refunds by line, drafts in simulation, and answers unchanged on cards without rules.
 */
let sys: TestSystem;
let api: Api;
let readOnly: Api;
let tenantId: number;
const PTS = '/api/v1/loyalty/points';
const ALL = ['points_read', 'points_write', 'cashback_read', 'cashback_write', 'card_read', 'programme_manage'];

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger'] });
  const t = await sys.tenant({ scopes: ALL });
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
  readOnly = apiClient(sys.url, await sys.tenant());
});
afterAll(async () => {
  await sys?.stop();
});

type Body = Record<string, unknown>;
const rulesOf = (card: number) => `/api/v1/loyalty/cards/${card}/rules`;

async function rule(card: number, body: Body): Promise<number> {
  const r = await api('POST', rulesOf(card), { body: { status: 'active', ...body } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return (r.body.data!.rule as { id: number }).id;
}

async function earn(card: number, body: Body, status = 200) {
  const r = await api('POST', `${PTS}/earn`, { body: { card_id: card, ...body } });
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
}

/** Move the shared test clock to `iso` (it keeps running from there). */
function setClock(iso: string): void {
  sys.clock.advance(Date.parse(iso) - sys.clock.now().getTime());
}

const pastry = (qty: number, price: number) => ({
  sku: 'croissant',
  category: 'pastry',
  quantity: qty,
  unit_price: price,
});
const coffee = (qty: number, price: number) => ({ sku: 'coffee', category: 'drink', quantity: qty, unit_price: price });

describe('cards without rules', () => {
  it('answer exactly as before, line items and tags accepted and checked', async () => {
    const card = await pointsCard(sys, tenantId);
    const plain = await earn(card, { email: email('plain'), purchase_amount: 12.5 });
    const lined = await earn(card, {
      email: email('lined'),
      purchase_amount: 12.5,
      line_items: [pastry(2, 2.5), coffee(1, 7.5)],
      tags: ['online'],
    });
    expect(Object.keys(lined.data!).sort()).toEqual(Object.keys(plain.data!).sort());
    expect(lined.data).toMatchObject({ points_earned: 12, new_balance: 12 });
    const bad = await earn(card, { email: email('bad'), purchase_amount: 12.5, line_items: [pastry(2, 2.5)] }, 422);
    expect(bad.error).toMatchObject({ code: 'line_items_mismatch', difference: -7.5, line_items_total: 5 });
    const quote = await api('POST', `${PTS}/quote`, {
      body: { operation: 'earn', card_id: card, email: email('q'), purchase_amount: 12.5 },
    });
    expect(quote.body.data).not.toHaveProperty('trace');
    expect(quote.body.data).not.toHaveProperty('rules_applied');
  });
});

describe('managing rules', () => {
  it('needs programme_manage, validates with field paths and stores nothing bad', async () => {
    const card = await pointsCard(sys, tenantId);
    const refused = await readOnly('GET', rulesOf(card));
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'insufficient_scope', required_scope: 'programme_manage' });
    const bad = async (body: Body, fields: string[]) => {
      const r = await api('POST', rulesOf(card), { body: { name: 'bad', ...body } });
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      expect(r.body.error).toMatchObject({ code: 'invalid_rule' });
      expect((r.body.error!.fields as { field: string }[]).map((f) => f.field)).toEqual(fields);
    };
    await bad({ kind: 'bogus' }, ['kind']);
    await bad({ kind: 'multiplier', factor: 0 }, ['factor']);
    await bad({ kind: 'multiplier', factor: 101 }, ['factor']);
    await bad(
      {
        kind: 'multiplier',
        factor: 2,
        conditions: { active_from: '2026-05-01T00:00:00Z', active_until: '2026-04-01T00:00:00Z' },
      },
      ['conditions.active_until'],
    );
    await bad({ kind: 'fixed', points: 5, conditions: { days_of_week: [] } }, ['conditions.days_of_week']);
    // Times the calendar does not have: JavaScript would move 2026-02-30 to March 2 and read years 0 and 275760.
    for (const at of ['2026-02-30T00:00:00Z', '0000-01-01T00:00:00Z', '+275760-09-13T00:00:00Z', '2026-05-01junk'])
      await bad({ kind: 'fixed', points: 5, conditions: { active_from: at } }, ['conditions.active_from']);
    await bad({ kind: 'fixed', points: 5, conditions: { active_until: '2026-04-31T00:00:00Z' } }, [
      'conditions.active_until',
    ]);
    const feb30 = await api('POST', rulesOf(card), {
      body: { name: 'a', kind: 'fixed', points: 5, conditions: { active_from: '2026-02-30T00:00:00Z' } },
    });
    expect(feb30.body.error!.fields).toEqual([
      { field: 'conditions.active_from', message: 'has day 30 of February 2026, which has 28 days' },
    ]);
    // A time without its offset names no instant of its own: it was read in the server's time zone.
    const local = await api('POST', rulesOf(card), {
      body: {
        name: 'a',
        kind: 'fixed',
        points: 5,
        conditions: { active_from: '2026-05-01T00:00:00', active_until: '2026-06-01 00:00' },
      },
    });
    expect(local.status, JSON.stringify(local.body)).toBe(422);
    expect(local.body.error).toMatchObject({
      code: 'invalid_rule',
      fields: [
        {
          field: 'conditions.active_from',
          message: 'must be an ISO 8601 date (2024-03-01) or time (2024-03-01T10:00:00Z) with its offset (Z or +01:00)',
        },
        {
          field: 'conditions.active_until',
          message: 'must be an ISO 8601 date (2024-03-01) or time (2024-03-01T10:00:00Z) with its offset (Z or +01:00)',
        },
      ],
    });
    await bad({ kind: 'fixed', points: 5, conditions: { first_purchase: true, every_nth: 3 } }, [
      'conditions.every_nth',
    ]);
    // Whole numbers all, but no member's purchase count: 1e300 was taken.
    for (const everyNth of [0, 2.5, 1e300, 1_000_001])
      await bad({ kind: 'fixed', points: 5, conditions: { every_nth: everyNth } }, ['conditions.every_nth']);
    const huge = await api('POST', rulesOf(card), {
      body: { name: 'a', kind: 'fixed', points: 5, conditions: { every_nth: 1e300 } },
    });
    expect(huge.body.error!.fields).toEqual([
      { field: 'conditions.every_nth', message: 'must be a whole number from 1 to 1000000' },
    ]);
    // A misspelt condition or cap field is refused, not dropped (dropped, the rule would match more).
    for (const body of [
      { kind: 'fixed', points: 5, conditions: { min_amout: 20 } },
      { kind: 'fixed', points: 5, cap: { limit: 5, period: 'week', perod: 'day' } },
    ]) {
      const r = await api('POST', rulesOf(card), { body: { name: 'typo', ...body } });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'validation_error' });
      expect(JSON.stringify(r.body.error!.fields)).toMatch(/min_amout|perod/);
    }
    const list = await api('GET', rulesOf(card));
    expect(list.body.data).toMatchObject({ total: 0, rules: [], time_zone: 'UTC' });
    // A change is checked the same way, and stores nothing.
    const kept = await rule(card, {
      name: 'kept',
      kind: 'fixed',
      points: 5,
      conditions: { active_from: '2026-02-28T00:00:00+01:00' },
    });
    const patched = await api('PATCH', `${rulesOf(card)}/${kept}`, {
      body: { conditions: { active_from: '2026-02-29T00:00:00Z', active_until: '2026-03-10T00:00:00Z' } },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(422);
    expect(patched.body.error!.fields).toEqual([
      { field: 'conditions.active_from', message: 'has day 29 of February 2026, which has 28 days' },
    ]);
    expect((await api('GET', `${rulesOf(card)}/${kept}`)).body.data!.rule).toMatchObject({
      version: 1,
      conditions: { active_from: '2026-02-28T00:00:00+01:00' },
    });
    await api('DELETE', `${rulesOf(card)}/${kept}`);
    const tz = await sys
      .admin('POST', `/admin/v1/tenants/${tenantId}/cards/${card}`, { time_zone: 'Mars/Olympus' })
      .catch((e: Error) => e.message);
    expect(tz).toContain('invalid_time_zone');
  });

  it('refuses a misspelt top-level field of a change (a rule, a card, a reward), naming it and changing nothing', async () => {
    const card = await pointsCard(sys, tenantId);
    const id = await rule(card, { name: 'typo target', kind: 'multiplier', factor: 2 });
    const fieldsOf = (error: unknown) => (error as { fields: { field: string; message: string }[] }).fields;
    // `nmae` and `factr` would have been dropped: the rule kept as it was, answered 200 as if changed.
    const patched = await api('PATCH', `${rulesOf(card)}/${id}`, { body: { nmae: 'renamed', factr: 3 } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(400);
    expect(patched.body.error).toMatchObject({ code: 'validation_error' });
    expect(fieldsOf(patched.body.error).map((f) => f.field)).toEqual(['nmae', 'factr']);
    expect(fieldsOf(patched.body.error)[0]!.message).toMatch(/not a field/);
    // A known field beside a misspelt one is not applied either: the request is refused whole.
    const mixed = await api('PATCH', `${rulesOf(card)}/${id}`, { body: { factor: 3, priorty: 5 } });
    expect(mixed.status).toBe(400);
    expect(fieldsOf(mixed.body.error).map((f) => f.field)).toEqual(['priorty']);
    expect((await api('GET', `${rulesOf(card)}/${id}`)).body.data!.rule).toMatchObject({
      name: 'typo target',
      factor: 2,
      priority: 0,
      version: 1,
    });
    // The path parameters are not body fields, and a right change still works.
    const fine = await api('PATCH', `${rulesOf(card)}/${id}`, { body: { name: 'renamed' } });
    expect(fine.status, JSON.stringify(fine.body)).toBe(200);
    // The operator's changes of a card and of a reward (partial updates like a PATCH) refuse the same way.
    const operator = async (path: string, body: unknown) => {
      const r = await fetch(`${sys.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: (await r.json()) as { error?: unknown; data?: Record<string, unknown> } };
    };
    const cardPath = `/admin/v1/tenants/${tenantId}/cards/${card}`;
    const c = await operator(cardPath, { referer_bonus: 50, name: 'Renamed card' });
    expect(c.status, JSON.stringify(c.body)).toBe(400);
    expect(fieldsOf(c.body.error).map((f) => f.field)).toEqual(['referer_bonus']);
    const { card: stored } = await sys.admin<{ card: { name: string; referrer_bonus: number } }>('GET', cardPath);
    expect(stored).toMatchObject({ referrer_bonus: 0 });
    expect(stored.name).not.toBe('Renamed card');
    const { reward } = await sys.admin<{ reward: { id: number } }>('POST', `${cardPath}/rewards`, {
      name: 'Coffee',
      points_cost: 10,
    });
    const w = await operator(`${cardPath}/rewards/${reward.id}`, { activ: false });
    expect(w.status, JSON.stringify(w.body)).toBe(400);
    expect(fieldsOf(w.body.error).map((f) => f.field)).toEqual(['activ']);
  });

  it('creates once under an Idempotency-Key and limits a card to 100 active rules', async () => {
    const card = await pointsCard(sys, tenantId);
    const create = (key: string, body: Body) =>
      api('POST', rulesOf(card), {
        body: { name: 'r', kind: 'fixed', points: 1, ...body },
        headers: { 'idempotency-key': key },
      });
    const first = await create('rule-key-1', {});
    const again = await create('rule-key-1', {});
    expect(again.body.data).toEqual(first.body.data);
    expect((await create('rule-key-1', { points: 2 })).status).toBe(409);
    for (let i = 0; i < 100; i++) await rule(card, { name: `r${i}`, kind: 'fixed', points: 1 });
    const over = await api('POST', rulesOf(card), {
      body: { name: 'one more', kind: 'fixed', points: 1, status: 'active' },
    });
    expect(over.status).toBe(422);
    expect(over.body.error).toMatchObject({ code: 'active_rule_limit' });
    const draftId = (first.body.data!.rule as { id: number }).id;
    expect((await api('POST', `${rulesOf(card)}/${draftId}/activate`)).body.error).toMatchObject({
      code: 'active_rule_limit',
    });
    const list = await api('GET', rulesOf(card));
    expect(list.body.data).toMatchObject({ total: 101 });
  }, 60_000);

  it('versions an edited active rule, pauses, ends, deletes drafts, audits every change', async () => {
    const card = await pointsCard(sys, tenantId);
    const id = await rule(card, { name: 'double', kind: 'multiplier', factor: 2 });
    const member = await earn(card, { email: email('v'), purchase_amount: 10 });
    expect(member.data).toMatchObject({ points_earned: 20, rules_applied: [{ rule_id: id, version: 1, points: 10 }] });
    const patched = await api('PATCH', `${rulesOf(card)}/${id}`, { body: { factor: 3 } });
    expect(patched.body.data!.rule).toMatchObject({ version: 2, factor: 3, status: 'active' });
    const again = await earn(card, { member_id: member.data!.member_id, purchase_amount: 10 });
    expect(again.data).toMatchObject({ points_earned: 30, rules_applied: [{ rule_id: id, version: 2, points: 20 }] });
    const { rows } = await sys.db.query<{ rules: { version: number }[] }>(
      'SELECT rules FROM ledger.journal_rules WHERE journal_id = ANY($1) ORDER BY journal_id',
      [[member.data!.transaction_id, again.data!.transaction_id]],
    );
    expect(rows.map((r) => r.rules[0]!.version)).toEqual([1, 2]);
    expect((await api('POST', `${rulesOf(card)}/${id}/pause`)).body.data!.rule).toMatchObject({ status: 'paused' });
    const paused = await earn(card, { member_id: member.data!.member_id, purchase_amount: 10 });
    expect(paused.data).toMatchObject({ points_earned: 10 });
    expect(paused.data).not.toHaveProperty('rules_applied');
    const ended = await api('DELETE', `${rulesOf(card)}/${id}`);
    expect(ended.body.data).toEqual({ rule_id: id, deleted: false, status: 'ended' });
    expect((await api('POST', `${rulesOf(card)}/${id}/activate`)).status).toBe(409);
    const pauseEnded = await api('POST', `${rulesOf(card)}/${id}/pause`);
    expect(pauseEnded.status).toBe(409);
    expect(pauseEnded.body.error).toMatchObject({
      code: 'rule_state_conflict',
      message: 'An ended rule cannot be paused.',
    });
    const draft = (await api('POST', rulesOf(card), { body: { name: 'd', kind: 'fixed', points: 1 } })).body.data!
      .rule as { id: number };
    expect((await api('POST', `${rulesOf(card)}/${draft.id}/pause`)).body.error).toMatchObject({
      message: 'A draft rule cannot be paused.',
    });
    expect((await api('DELETE', `${rulesOf(card)}/${draft.id}`)).body.data).toMatchObject({ status: 'deleted' });
    expect((await api('GET', `${rulesOf(card)}/${draft.id}`)).status).toBe(404);
    const audit = await sys.db.query<{ action: string }>(
      `SELECT payload->'data'->>'action' AS action FROM ledger.outbox
        WHERE subject LIKE '%audit_recorded' AND payload->'data'->>'action' LIKE 'rule.%'
          AND payload->'data'->'target'->>'card_id' = $1 ORDER BY created_at`,
      [String(card)],
    );
    expect(audit.rows.map((r) => r.action)).toEqual([
      'rule.created',
      'rule.updated',
      'rule.paused',
      'rule.ended',
      'rule.created',
      'rule.deleted',
    ]);
  });
});

describe('kinds and conditions', () => {
  it('multiplier on a category, per amount on a SKU, fixed from a minimum, tags, every Nth', async () => {
    const card = await pointsCard(sys, tenantId);
    await rule(card, { name: 'pastry x2', kind: 'multiplier', factor: 2, conditions: { categories: ['pastry'] } });
    await rule(card, { name: 'coffee +1/unit', kind: 'per_amount', points: 1, conditions: { skus: ['coffee'] } });
    await rule(card, { name: 'big basket', kind: 'fixed', points: 50, conditions: { min_amount: 20 } });
    await rule(card, { name: 'online', kind: 'fixed', points: 5, conditions: { tags: ['online'] } });
    await rule(card, { name: 'third visit', kind: 'fixed', points: 7, conditions: { every_nth: 3 } });
    const first = await earn(card, {
      email: email('k'),
      purchase_amount: 25,
      line_items: [pastry(4, 2.5), coffee(3, 5)],
      tags: ['online'],
    });
    // base 25; pastry 10 more; coffee 15 more; fixed 50; online 5.
    expect(first.data).toMatchObject({ points_earned: 25 + 10 + 15 + 50 + 5 });
    expect((first.data!.rules_applied as { name: string }[]).map((r) => r.name)).toEqual([
      'pastry x2',
      'coffee +1/unit',
      'big basket',
      'online',
    ]);
    const m = first.data!.member_id;
    expect((await earn(card, { member_id: m, purchase_amount: 5 })).data).toMatchObject({ points_earned: 5 });
    expect((await earn(card, { member_id: m, purchase_amount: 5 })).data).toMatchObject({ points_earned: 5 + 7 });
  });

  it('a 20-line purchase: what each line earned is kept exactly, compressed with lz4', async () => {
    const card = await pointsCard(sys, tenantId);
    await rule(card, { name: 'pastry x2', kind: 'multiplier', factor: 2, conditions: { categories: ['pastry'] } });
    const lines = Array.from({ length: 20 }, (_, k) => ({
      sku: `sku-${k}-${'x'.repeat(40)}`,
      name: `Line number ${k} of a long basket`,
      category: k % 2 === 0 ? 'pastry' : 'drink',
      quantity: 1,
      unit_price: 1,
    }));
    const r = await earn(card, { email: email('lz4'), purchase_amount: 20, line_items: lines });
    expect(r.data).toMatchObject({ points_earned: 30 });
    const { rows } = await sys.db.query<{ lines: number; allocation: string | null; rules: string | null }>(
      `SELECT jsonb_array_length(allocation -> 'lines') AS lines, pg_column_compression(allocation) AS allocation,
              pg_column_compression(rules) AS rules
         FROM ledger.journal_rules WHERE journal_id = $1`,
      [r.data!.transaction_id],
    );
    // The row is over PostgreSQL's 2 KB threshold: its largest value is compressed, with lz4 (a
    // server without lz4 would have kept pglz and refused nothing).
    expect(rows).toEqual([{ lines: 20, allocation: 'lz4', rules: null }]);
  });

  it('best of a group, exclusive stops lower rules and may replace the base, first purchase', async () => {
    const card = await pointsCard(sys, tenantId);
    await rule(card, { name: 'b small', kind: 'fixed', points: 3, combination: 'best', group: 'g', priority: 5 });
    await rule(card, { name: 'b big', kind: 'fixed', points: 8, combination: 'best', group: 'g', priority: 4 });
    await rule(card, {
      name: 'welcome',
      kind: 'fixed',
      points: 100,
      conditions: { first_purchase: true },
      priority: 1,
    });
    const r = await earn(card, { email: email('b'), purchase_amount: 10 });
    expect(r.data).toMatchObject({ points_earned: 10 + 8 + 100 });
    await rule(card, {
      name: 'triple only',
      kind: 'multiplier',
      factor: 3,
      combination: 'exclusive',
      replaces_base: true,
      priority: 10,
    });
    const r2 = await earn(card, { member_id: r.data!.member_id, purchase_amount: 10 });
    expect(r2.data).toMatchObject({ points_earned: 30, rules_applied: [{ name: 'triple only', points: 30 }] });
  });

  it('cashback cards: extra percentage and a fixed amount', async () => {
    const card = await cashbackCard(sys, tenantId, {
      cashback_percentage: 5,
      cashback_min_amount: 0,
      cashback_max_amount: null,
    });
    await rule(card, { name: '+2.5%', kind: 'per_amount', percentage: 2.5 });
    await rule(card, { name: '+1.25', kind: 'fixed', amount: 1.25 });
    const r = await api('POST', '/api/v1/cashback/cashback/earn', {
      body: { card_id: card, email: email('cb'), purchase_amount: 10.1 },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({
      cashback_earned: 2.01, // 0.51 base (50.5 cents, half-up) + 0.25 + 1.25
      rules_applied: [
        { name: '+2.5%', amount: 0.25 },
        { name: '+1.25', amount: 1.25 },
      ],
    });
  });

  it('member events give points once per reference', async () => {
    const card = await pointsCard(sys, tenantId);
    await rule(card, { name: 'birthday', kind: 'event', event: 'birthday', points: 50 });
    const m = (await earn(card, { email: email('ev'), purchase_amount: 1 })).data!.member_id;
    const report = () =>
      api('POST', `${PTS}/events`, { body: { card_id: card, member_id: m, event: 'birthday', reference: 'bd-2026' } });
    const first = await report();
    expect(first.body.data).toMatchObject({ points_earned: 50, new_balance: 51, replayed: false });
    const second = await report();
    expect(second.body.data).toMatchObject({ points_earned: 50, new_balance: 51, replayed: true });
    const other = await api('POST', `${PTS}/events`, {
      body: { card_id: card, member_id: m, event: 'anniversary', reference: 'x-1' },
    });
    expect(other.body.data).toMatchObject({ points_earned: 0, transaction_id: null, new_balance: 51 });
  });
});

describe('time zones on the test clock', () => {
  it('a Sunday rule follows local midnight across the end of DST in Berlin', async () => {
    const card = await pointsCard(sys, tenantId, { time_zone: 'Europe/Berlin' });
    await rule(card, { name: 'sunday', kind: 'fixed', points: 9, conditions: { days_of_week: ['sun'] } });
    const m = (await earn(card, { email: email('tz'), purchase_amount: 1 })).data!.member_id;
    const at = async (iso: string) => {
      setClock(iso);
      return (await earn(card, { member_id: m, purchase_amount: 1 })).data!.points_earned;
    };
    expect(await at('2026-10-24T21:59:00Z')).toBe(1); // Saturday 23:59 CEST
    expect(await at('2026-10-24T22:00:30Z')).toBe(10); // Sunday 00:00 CEST
    expect(await at('2026-10-25T22:59:00Z')).toBe(10); // Sunday 23:59 CET, 25 hours later
    expect(await at('2026-10-25T23:00:30Z')).toBe(1); // Monday 00:00 CET
  });

  it('a daily cap restarts at local midnight', async () => {
    const card = await pointsCard(sys, tenantId, { time_zone: 'America/New_York' });
    await rule(card, { name: 'daily', kind: 'fixed', points: 10, cap: { limit: 15, period: 'day' } });
    setClock('2026-03-08T04:30:00Z'); // 23:30 EST on Saturday 7 March
    const m = (await earn(card, { email: email('cap'), purchase_amount: 1 })).data!.member_id;
    expect((await earn(card, { member_id: m, purchase_amount: 1 })).data).toMatchObject({
      points_earned: 6,
      rules_applied: [{ points: 5, capped: true }],
    });
    setClock('2026-03-08T05:00:30Z'); // 00:00 EST on Sunday, the day clocks go forward
    expect((await earn(card, { member_id: m, purchase_amount: 1 })).data).toMatchObject({ points_earned: 11 });
  });
});

describe('caps and budgets under concurrency', () => {
  it('50 concurrent earns of one member never pass the member cap', async () => {
    const card = await pointsCard(sys, tenantId);
    await rule(card, { name: 'capped', kind: 'fixed', points: 7, cap: { limit: 100, period: 'month' } });
    const m = (await earn(card, { email: email('c50'), purchase_amount: 1 })).data!.member_id as number;
    const all = await Promise.all(
      Array.from({ length: 50 }, () =>
        api('POST', `${PTS}/earn`, { body: { card_id: card, member_id: m, purchase_amount: 1 } }),
      ),
    );
    expect(all.map((r) => r.status)).toEqual(all.map(() => 200));
    const bonus = all.reduce((a, r) => a + (r.body.data!.points_earned as number) - 1, 0);
    expect(bonus + 7).toBe(100);
    const { rows } = await sys.db.query<{ given: string }>(
      'SELECT given::text FROM ledger.rule_member_usage WHERE member_id = $1',
      [m],
    );
    expect(rows.map((r) => Number(r.given))).toEqual([100]);
    expect(await lotsAgree(sys, card, m)).toBe(1);
  });

  it('50 members at once never pass a budget, and its end is announced once', { timeout: 30_000 }, async () => {
    const card = await pointsCard(sys, tenantId);
    const id = await rule(card, { name: 'launch', kind: 'fixed', points: 10, budget: 155 });
    // Members made first (on another card), so the burst is only the ledger's earns.
    const elsewhere = await pointsCard(sys, tenantId);
    const members: number[] = [];
    for (let i = 0; i < 50; i++)
      members.push((await earn(elsewhere, { email: email(`b${i}`), purchase_amount: 1 })).data!.member_id as number);
    const all = await Promise.all(
      members.map((m) => api('POST', `${PTS}/earn`, { body: { card_id: card, member_id: m, purchase_amount: 1 } })),
    );
    expect(all.map((r) => r.status)).toEqual(all.map(() => 200));
    const bonus = all.reduce((a, r) => a + (r.body.data!.points_earned as number) - 1, 0);
    expect(bonus).toBe(155);
    const rules = await api('GET', `${rulesOf(card)}/${id}`);
    expect(rules.body.data!.rule).toMatchObject({ budget_used: 155 });
    const events = await sys.db.query(
      `SELECT 1 FROM ledger.outbox WHERE subject LIKE '%rule_budget_exhausted' AND payload->'data'->>'rule_id' = $1`,
      [String(id)],
    );
    expect(events.rowCount).toBe(1);
  });
});

describe('refunds by line', () => {
  it('take back what the lines earned with their bonuses, and a fixed bonus the refund breaks', async () => {
    const card = await pointsCard(sys, tenantId);
    await rule(card, { name: 'pastry x3', kind: 'multiplier', factor: 3, conditions: { categories: ['pastry'] } });
    await rule(card, { name: 'basket', kind: 'fixed', points: 40, conditions: { min_amount: 20 } });
    const e = await earn(card, {
      email: email('rf'),
      purchase_amount: 30,
      reference: 'sale-1',
      line_items: [pastry(4, 2.5), coffee(4, 5)],
    });
    expect(e.data).toMatchObject({ points_earned: 30 + 20 + 40 });
    const m = e.data!.member_id;
    const body = (b: Body) => ({ card_id: card, member_id: m, reference: 'sale-1', ...b });
    const refund = (b: Body) => api('POST', `${PTS}/refund`, { body: body(b) });
    // The quote of a refund decides as the refund will (and changes nothing).
    const quote = async (b: Body) =>
      (await api('POST', `${PTS}/quote`, { body: { operation: 'refund', ...body(b) } })).body.data;
    const oneLine = { refund_amount: 2.5, line_items: [{ sku: 'croissant', quantity: 1 }] };
    expect(await quote(oneLine)).toMatchObject({ points: 7, would_succeed: true });
    expect(await quote(oneLine)).toMatchObject({ points: 7 });
    const one = await refund(oneLine);
    expect(one.body.data).toMatchObject({ points_deducted: 7 }); // (10 base + 20 bonus) / 4 = 7.5 -> 7
    const threeCoffees = { refund_amount: 15, line_items: [{ sku: 'coffee', quantity: 3 }] };
    expect(await quote(threeCoffees)).toMatchObject({ points: 15 + 40 });
    const coffees = await refund(threeCoffees);
    // 15 base; what is left (12.50) is below the basket's 20: its 40 goes too.
    expect(coffees.body.data).toMatchObject({ points_deducted: 15 + 40 });
    const twoCoffees = { refund_amount: 20, line_items: [{ sku: 'coffee', quantity: 2 }] };
    expect(await quote(twoCoffees)).toMatchObject({
      would_succeed: false,
      warnings: [expect.objectContaining({ code: 'line_items_mismatch' })],
    });
    const tooMany = await refund(twoCoffees);
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.error).toMatchObject({ code: 'line_items_mismatch' });
    const rest = await refund({
      refund_amount: 12.5,
      line_items: [
        { sku: 'croissant', quantity: 3 },
        { sku: 'coffee', quantity: 1 },
      ],
    });
    expect(rest.body.data).toMatchObject({ points_deducted: 90 - 7 - 55, new_balance: 0 });
  });

  it('a whole refund without lines takes back the bonuses too', async () => {
    const card = await pointsCard(sys, tenantId);
    await rule(card, { name: 'x2', kind: 'multiplier', factor: 2 });
    const e = await earn(card, { email: email('rw'), purchase_amount: 10, reference: 'sale-2' });
    const quoted = await api('POST', `${PTS}/quote`, {
      body: {
        operation: 'refund',
        card_id: card,
        member_id: e.data!.member_id,
        reference: 'sale-2',
        refund_amount: 10,
      },
    });
    expect(quoted.body.data).toMatchObject({ points: 20, new_balance: 0 });
    const r = await api('POST', `${PTS}/refund`, {
      body: { card_id: card, member_id: e.data!.member_id, reference: 'sale-2', refund_amount: 10 },
    });
    expect(r.body.data).toMatchObject({ points_deducted: 20, new_balance: 0 });
  });
});

describe('simulation', () => {
  it('quotes evaluate active rules, and drafts when asked, answering the trace', async () => {
    const card = await pointsCard(sys, tenantId);
    const draft = (
      await api('POST', rulesOf(card), {
        body: { name: 'draft x2', kind: 'multiplier', factor: 2, cap: { limit: 5, period: 'week' } },
      })
    ).body.data!.rule as { id: number };
    const quote = (extra: Body) =>
      api('POST', `${PTS}/quote`, {
        body: { operation: 'earn', card_id: card, email: email('sim'), purchase_amount: 10, ...extra },
      });
    const plain = await quote({});
    expect(plain.body.data).toMatchObject({ points: 10 });
    expect(plain.body.data).not.toHaveProperty('trace');
    const simulated = await quote({ include_drafts: true });
    expect(simulated.body.data).toMatchObject({
      points: 15,
      base: 10,
      rules_applied: [{ rule_id: draft.id, points: 5, capped: true }],
      trace: [
        {
          rule_id: draft.id,
          status: 'draft',
          matched: true,
          computed: 10,
          gave: 5,
          capped: true,
          reason: 'its cap is reached',
          cap: { period: 'week', limit: 5, used: 0, remaining: 5 },
        },
      ],
    });
    expect((await quote({ rule_ids: [draft.id] })).body.data).toMatchObject({ points: 15 });
    expect((await quote({ rule_ids: [999_999] })).status).toBe(404);
    // An app of the tenant that may quote but not manage the programme sees active rules only.
    const { app } = await sys.admin<{ app: { app_id: string; api_key: string } }>(
      'POST',
      `/admin/v1/tenants/${tenantId}/apps`,
      { name: 'till', scopes: ['points_read', 'points_write', 'card_read'] },
    );
    const till = apiClient(sys.url, { appId: app.app_id, apiKey: app.api_key });
    const tillQuote = (extra: Body) =>
      till('POST', `${PTS}/quote`, {
        body: { operation: 'earn', card_id: card, email: email('till'), purchase_amount: 10, ...extra },
      });
    expect((await tillQuote({})).body.data).toMatchObject({ points: 10 });
    for (const extra of [{ include_drafts: true }, { rule_ids: [draft.id] }]) {
      const refused = await tillQuote(extra);
      expect(refused.status, JSON.stringify(refused.body)).toBe(403);
      expect(refused.body.error).toMatchObject({
        code: 'insufficient_scope',
        required_scope: 'programme_manage',
      });
      expect(JSON.stringify(refused.body)).not.toContain('draft x2');
    }
    // Nothing was earned by quoting.
    expect((await earn(card, { email: email('after'), purchase_amount: 10 })).data).toMatchObject({
      points_earned: 10,
    });
  });

  it("the console's preview applies a named member's caps, and refuses an unknown or foreign member", async () => {
    // An unknown member_id was previewed as a new member's purchase (200, no caps used), where the
    // manager meant someone: the quote answers 404 member_not_found, and so does the preview now.
    const card = await pointsCard(sys, tenantId);
    await rule(card, { name: 'ten', kind: 'fixed', points: 10, cap: { limit: 15, period: 'month' } });
    const member = (await earn(card, { email: email('previewed'), purchase_amount: 10 })).data!.member_id as number;
    const other = await sys.tenant();
    const stranger = (
      await apiClient(sys.url, other)('POST', `${PTS}/earn`, {
        body: { card_id: await pointsCard(sys, other.tenantId), email: email('stranger'), purchase_amount: 1 },
      })
    ).body.data!.member_id as number;
    await sys.admin('POST', `/admin/v1/tenants/${tenantId}/staff`, {
      email: 'preview-boss@example.com',
      role: 'manager',
    });
    const staff = staffClient(sys.url);
    const token = await signIn(staff, tenantId, 'preview-boss@example.com');
    const preview = (body: Body) =>
      staff('POST', `/staff/v1/cards/${card}/rules/preview`, { token, body: { purchase_amount: 10, ...body } });
    expect((await preview({})).body.data).toMatchObject({ total: 20, rules_applied: [{ points: 10 }] });
    expect((await preview({ member_id: member })).body.data).toMatchObject({
      total: 15,
      rules_applied: [{ points: 5, capped: true }],
    });
    for (const id of [999_999, stranger]) {
      const refused = await preview({ member_id: id });
      expect(refused.status, JSON.stringify(refused.body)).toBe(404);
      expect(refused.body.error).toMatchObject({ code: 'member_not_found' });
    }
  });
});
