import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operations, operatorOperations, type Operation } from '@loyalty/contracts';
import { JobStore } from '@loyalty/runtime';
import { apiClient, OPERATOR_TOKEN, startTestSystem, type TestSystem } from '../../../test/support/system.ts';

/**
 * A path parameter names the resource; it cannot be given again in the query or the body (the
 * body used to win: `POST /claims/7/reject` with `{"request_id": 8}` rejected claim 8). Every
 * operation of both contract tables whose path has parameters is tried both ways, with the
 * parameter of another, real resource, and must be refused without changing anything.
 */
let sys: TestSystem;
let api: ReturnType<typeof apiClient>;
/** Per path parameter: the value put in the path, and another real resource's value sent along. */
const values: Record<string, { path: string | number; other: string | number }> = {};

/** A valid body per POST operation (so the path parameter is the only thing wrong); `{}` when none is needed. */
const validBodies: Record<string, Record<string, unknown>> = {
  'admin.app.create': { name: 'another app', scopes: [] },
  'admin.card.create': { name: 'another card', reward_system: 'points', points_ratio: 1 },
  'admin.card.update': { name: 'renamed card' },
  'admin.reward.create': { name: 'another reward', points_cost: 5 },
  'admin.reward.update': { name: 'renamed reward', active: false },
  'claims.approve': { staff_note: 'approved' },
  'claims.reject': { staff_note: 'rejected' },
  'admin.tenant.update': { contact_email: 'it@example.com' },
  'admin.webhooks.endpoints.create': { url: 'http://127.0.0.1:9/hook', event_types: ['*'] },
  'webhooks.endpoints.update': { description: 'changed' },
  'admin.webhooks.endpoints.update': { description: 'changed' },
  'rules.create': { name: 'another rule', kind: 'fixed', points: 1 },
  'admin.rules.create': { name: 'another rule', kind: 'fixed', points: 1 },
  'rules.update': { name: 'renamed rule' },
  'admin.rules.update': { name: 'renamed rule' },
  'tiers.put': { tiers: [{ name: 'Base', rank: 0, entry_threshold: 0, retain_threshold: 0 }] },
  'admin.tiers.put': { tiers: [{ name: 'Base', rank: 0, entry_threshold: 0, retain_threshold: 0 }] },
  'admin.tiers.set': { tier: 'Base', valid_until: '2099-01-01T00:00:00Z', reason: 'test' },
  'admin.tenant.mail.templates.update': { subject: 'Hi {{name}}', body: 'Hello {{name}}' },
  'admin.tenant.mail.templates.preview': { subject: 'Hi {{name}}', body: 'Hello {{name}}' },
};

/** The tables the operations with path parameters write. */
const TABLES = [
  'identity.tenants',
  'identity.apps',
  'identity.mail_templates',
  'ledger.cards',
  'ledger.rewards',
  'ledger.rules',
  'ledger.rule_versions',
  'ledger.tier_ladders',
  'ledger.tiers',
  'ledger.member_tiers',
  'claims.claim_requests',
  'referrals.referral_codes',
  'webhooks.endpoints',
  'webhooks.deliveries',
];

const withParams = [
  ...Object.entries(operations).map(([name, op]) => ({ name, op, operator: false })),
  ...Object.entries(operatorOperations).map(([name, op]) => ({ name, op, operator: true })),
].filter(({ op }) => paramNames(op).length > 0);

function paramNames(op: Operation): string[] {
  return op.path
    .split('/')
    .filter((s) => s.startsWith(':'))
    .map((s) => s.slice(1));
}

function pathOf(op: Operation): string {
  return op.path.replace(/:([a-z_]+)/g, (_m, name: string) => String(values[name]!.path));
}

async function call(operator: boolean, method: string, path: string, body?: unknown) {
  const res = await fetch(`${sys.url}${path}`, {
    method,
    headers: {
      ...(operator ? { authorization: `Bearer ${OPERATOR_TOKEN}` } : {}),
      ...(!operator ? { 'x-app-id': tenant.appId, 'x-api-key': tenant.apiKey } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { success: boolean; error?: Record<string, unknown> } };
}

async function snapshot(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const table of TABLES) {
    const { rows } = await sys.db.query(
      `SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) AS h FROM ${table} t`,
    );
    out[table] = rows[0].h;
  }
  return out;
}

let tenant: { tenantId: number; appId: string; apiKey: string };
const claimIds: number[] = [];

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger', 'claims', 'referrals', 'webhooks'] });
  const scopes = [
    'points_read',
    'points_write',
    'cashback_read',
    'cashback_write',
    'card_read',
    'webhooks_manage',
    'programme_manage',
    'members_manage',
  ];
  tenant = await sys.tenant({ scopes });
  const other = await sys.tenant({ scopes });
  api = apiClient(sys.url, tenant);
  const card = async () =>
    (
      await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenant.tenantId}/cards`, {
        name: `Points ${Math.random()}`,
        reward_system: 'points',
        points_ratio: 1,
      })
    ).card.id;
  const [cardId, otherCardId] = [await card(), await card()];
  const reward = async () =>
    (
      await sys.admin<{ reward: { id: number } }>(
        'POST',
        `/admin/v1/tenants/${tenant.tenantId}/cards/${cardId}/rewards`,
        {
          name: 'Reward',
          points_cost: 100,
        },
      )
    ).reward.id;
  const [rewardId, otherRewardId] = [await reward(), await reward()];
  // A draft earning rule on each card.
  const rule = async (card: number) =>
    (
      await sys.admin<{ rule: { id: number } }>('POST', `/admin/v1/tenants/${tenant.tenantId}/cards/${card}/rules`, {
        name: 'Rule',
        kind: 'fixed',
        points: 1,
      })
    ).rule.id;
  const [ruleId, otherRuleId] = [await rule(cardId), await rule(otherCardId)];
  const memberIds: number[] = [];
  for (const email of ['first@example.com', 'second@example.com']) {
    const r = await api('POST', '/api/v1/loyalty/points/earn', {
      body: { card_id: cardId, email, member_name: 'Member', purchase_amount: 500 },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    memberIds.push(r.body.data!.member_id as number);
    const otp = await api('POST', '/api/v1/loyalty/claims/request-otp', {
      body: { member_email: email, card_id: cardId, reward_id: rewardId },
    });
    expect(otp.status, JSON.stringify(otp.body)).toBe(200);
    const verification_code = (otp.body.data!.otp_code as string | undefined) ?? (await sys.mail.codeFor(email));
    const c = await api('POST', '/api/v1/loyalty/claims', {
      body: { member_email: email, card_id: cardId, reward_id: rewardId, verification_code },
    });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    claimIds.push((c.body.data!.claim_request as { id: number }).id);
  }
  // A webhook endpoint and a delivery (a ping) of each tenant.
  const hooks: { endpoint: number; delivery: number }[] = [];
  for (const t of [tenant, other]) {
    const client = apiClient(sys.url, t);
    const e = await client('POST', '/api/v1/webhooks/endpoints', {
      body: { url: 'http://127.0.0.1:9/hook', event_types: ['*'] },
    });
    expect(e.status, JSON.stringify(e.body)).toBe(200);
    const endpoint = (e.body.data!.endpoint as { id: number }).id;
    const p = await client('POST', `/api/v1/webhooks/endpoints/${endpoint}/ping`);
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    hooks.push({ endpoint, delivery: (p.body.data!.delivery as { id: number }).id });
  }
  // The pings' first attempts (refused connections) are written first, so nothing of them lands later.
  for (let left = 150; ; left--) {
    const { rows } = await sys.db.query(`SELECT count(*)::int AS n FROM webhooks.deliveries WHERE attempt_count = 0`);
    if (rows[0].n === 0) break;
    if (left === 0) throw new Error('the pings were not attempted');
    await new Promise((r) => setTimeout(r, 100));
  }
  // Disabled, so the pings' deliveries are final (given up) and nothing changes during the tests.
  for (const [t, h] of [
    [tenant, hooks[0]!],
    [other, hooks[1]!],
  ] as const) {
    const d = await apiClient(sys.url, t)('PATCH', `/api/v1/webhooks/endpoints/${h.endpoint}`, {
      body: { enabled: false },
    });
    expect(d.status, JSON.stringify(d.body)).toBe(200);
  }
  // A job of each tenant (in identity's schema; its id names identity), for the jobs resource.
  const jobs = new JobStore(sys.db, 'identity');
  const job = (tenantId: number) => jobs.create(sys.db, { tenantId, kind: 'test.export', now: new Date() });
  // An import of each tenant (identity's: its id names identity).
  const anImport = async (tenantId: number) => {
    const id = randomUUID();
    const validate = jobs.rowId(await job(tenantId));
    await sys.db.query(
      `INSERT INTO identity.imports (id, tenant_id, kind, format, status, validate_job, created_at)
       VALUES ($1, $2, 'members', 'csv', 'invalid', $3, now())`,
      [id, tenantId, validate],
    );
    return `imp_identity_${id}`;
  };
  Object.assign(values, {
    import_id: { path: await anImport(tenant.tenantId), other: await anImport(other.tenantId) },
    job_id: { path: await job(tenant.tenantId), other: await job(other.tenantId) },
    // An export's entity names what is exported (and its owner): one the path names, another it does not.
    entity: { path: 'journal', other: 'members' },
    // A mail template is named by its kind and language.
    kind: { path: 'claim_approved', other: 'member_code' },
    locale: { path: 'fr', other: 'en' },
    endpoint_id: { path: hooks[0]!.endpoint, other: hooks[1]!.endpoint },
    delivery_id: { path: hooks[0]!.delivery, other: hooks[1]!.delivery },
    tenant_id: { path: tenant.tenantId, other: other.tenantId },
    app_id: { path: tenant.appId, other: other.appId },
    card_id: { path: cardId, other: otherCardId },
    member_id: { path: memberIds[0]!, other: memberIds[1]! },
    reward_id: { path: rewardId, other: otherRewardId },
    rule_id: { path: ruleId, other: otherRuleId },
    request_id: { path: claimIds[0]!, other: claimIds[1]! },
  });
});
afterAll(async () => sys?.stop());

describe('path parameters cannot be overridden', () => {
  it('covers the operations with path parameters of both tables', () => {
    expect(withParams.length).toBeGreaterThanOrEqual(10);
    expect(withParams.map((w) => w.name)).toEqual(expect.arrayContaining(['claims.approve', 'claims.reject']));
    for (const { op } of withParams) for (const name of paramNames(op)) expect(Object.keys(values)).toContain(name);
  });

  for (const { name, op, operator } of withParams) {
    for (const param of paramNames(op)) {
      it(`${name} (${op.method} ${op.path}): ${param} in the query is refused`, async () => {
        const before = await snapshot();
        const r = await call(operator, op.method, `${pathOf(op)}?${param}=${values[param]!.other}`, bodyFor(op, name));
        expectRefused(r, param, 'query');
        expect(await snapshot()).toEqual(before);
      });

      // An upload's body is a file, not fields (its content type is not JSON: 415).
      if ((op.method === 'POST' || op.method === 'PUT' || op.method === 'PATCH') && !op.upload) {
        it(`${name} (${op.method} ${op.path}): ${param} in the body is refused`, async () => {
          const before = await snapshot();
          const r = await call(operator, op.method, pathOf(op), {
            ...bodyFor(op, name),
            [param]: values[param]!.other,
          });
          expectRefused(r, param, 'body');
          expect(await snapshot()).toEqual(before);
        });
      }
    }
  }

  it('left both claims pending and the app key working', async () => {
    for (const id of claimIds) {
      const r = await api('GET', `/api/v1/loyalty/claims/${id}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.data!.claim_request).toMatchObject({ id, status: 'pending' });
    }
  });

  it('still serves the same calls without the extra field', async () => {
    const r = await api('GET', `/api/v1/loyalty/claims/${claimIds[0]}`);
    expect(r.status).toBe(200);
    const rejected = await api('POST', `/api/v1/loyalty/claims/${claimIds[0]}/reject`, { body: {} });
    expect(rejected.status, JSON.stringify(rejected.body)).toBe(200);
    expect(rejected.body.data!.claim_request).toMatchObject({ id: claimIds[0], status: 'rejected' });
    const other = await api('GET', `/api/v1/loyalty/claims/${claimIds[1]}`);
    expect(other.body.data!.claim_request).toMatchObject({ id: claimIds[1], status: 'pending' });
  });
});

function bodyFor(op: Operation, name: string): Record<string, unknown> | undefined {
  return op.method === 'POST' || op.method === 'PUT' || op.method === 'PATCH' ? (validBodies[name] ?? {}) : undefined;
}

function expectRefused(r: Awaited<ReturnType<typeof call>>, param: string, where: 'query' | 'body') {
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  expect(r.body.error).toMatchObject({
    code: 'validation_error',
    fields: expect.arrayContaining([
      { field: param, message: `is a path parameter; it cannot be given in the ${where}` },
    ]),
  });
}
