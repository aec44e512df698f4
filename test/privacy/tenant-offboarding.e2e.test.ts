import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_TOKEN, startTestSystem, type TestSystem } from '../support/system.ts';
import { eventually, signIn } from '../support/staff.ts';
import { privacyTenant, register, type Person, type PrivacyTenant } from './support.ts';

/**
 * The operator's offboarding of a tenant: deactivation (apps 403 tenant_inactive, staff refused,
 * webhooks paused), reactivation, an export as JSON Lines from every service, and a purge after
 * the retention period that leaves nothing of the tenant in any schema and another tenant as it was.
 */
let sys: TestSystem;
let t: PrivacyTenant;
let other: PrivacyTenant;
let member: Person;
const DAY = 86_400_000;
const SCHEMAS = ['identity', 'ledger', 'claims', 'referrals', 'webhooks'] as const;

beforeAll(async () => {
  sys = await startTestSystem({
    services: ['identity', 'ledger', 'claims', 'referrals', 'webhooks'],
    env: { TENANT_PURGE_RETENTION_DAYS: '30' },
  });
  t = await privacyTenant(sys);
  other = await privacyTenant(sys);
  member = await register(t.api, 'Olive');
  await register(other.api, 'Otto');
  const earn = await t.api('POST', '/api/v1/loyalty/points/earn', {
    body: { card_id: t.pointsCard, member_id: member.id, purchase_amount: 50, reference: 'offboard-1' },
  });
  expect(earn.status).toBe(200);
}, 180_000);
afterAll(async () => {
  await t?.receiver.stop();
  await other?.receiver.stop();
  await sys?.stop();
});

async function operator(method: string, path: string, body?: unknown) {
  const res = await fetch(`${sys.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${OPERATOR_TOKEN}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the answers' shapes are checked by the contract (checkResponse) elsewhere
  return { status: res.status, text, json: () => JSON.parse(text) as { data?: any; error?: any } };
}

/** Run every service's queued jobs until these have ended. */
async function finished(jobs: { service: string; job: { id: string } }[]) {
  return eventually(async () => {
    for (const s of SCHEMAS) await sys.services[s]!.runJobNow();
    const views = await Promise.all(
      jobs.map(async (j) => (await operator('GET', `/admin/v1/jobs/${j.job.id}`)).json().data),
    );
    return views.every((v) => v.status === 'succeeded' || v.status === 'failed') ? views : undefined;
  }, 60_000);
}

/** Rows of the tenant in every table of every schema that has a tenant_id. */
async function rowsOf(tenantId: number): Promise<Record<string, number>> {
  const { rows: tables } = await sys.db.query<{ schema: string; table: string }>(
    `SELECT c.table_schema AS schema, c.table_name AS table FROM information_schema.columns c
       JOIN information_schema.tables x ON x.table_schema = c.table_schema AND x.table_name = c.table_name AND x.table_type = 'BASE TABLE'
      WHERE c.table_schema = ANY($1) AND c.column_name = 'tenant_id' AND c.table_name NOT IN ('jobs', 'tenant_lifecycle')`,
    [SCHEMAS],
  );
  const counts: Record<string, number> = {};
  for (const { schema, table } of tables) {
    const { rows } = await sys.db.query(`SELECT count(*)::int AS n FROM "${schema}"."${table}" WHERE tenant_id = $1`, [
      tenantId,
    ]);
    if (rows[0].n > 0) counts[`${schema}.${table}`] = rows[0].n;
  }
  return counts;
}

describe('tenant offboarding', () => {
  it('deactivates: apps 403 tenant_inactive, staff refused, webhooks paused; reactivates', async () => {
    const early = await operator('POST', `/admin/v1/tenants/${t.tenantId}/purge`);
    expect(early.status).toBe(409);
    expect(early.json().error.code).toBe('tenant_active');

    const off = await operator('POST', `/admin/v1/tenants/${t.tenantId}/deactivate`, { reason: 'contract ended' });
    expect(off.status, off.text).toBe(200);
    expect(off.json().data.tenant).toMatchObject({ tenant_id: t.tenantId, status: 'inactive' });
    const refused = await t.api('GET', `/api/v1/loyalty/points/balance?card_id=${t.pointsCard}&member_id=${member.id}`);
    expect(refused.status).toBe(403);
    expect(refused.body.error!.code).toBe('tenant_inactive');
    const console = await t.staff('GET', '/staff/v1/me', { token: t.staffToken });
    expect(console.status).toBe(403);
    expect(console.body.error!.code).toBe('tenant_inactive');
    // Another tenant goes on.
    expect((await other.api('GET', '/api/v1/loyalty/claims?card_id=' + other.pointsCard)).status).toBe(200);
    await eventually(async () => {
      const { rows } = await sys.db.query('SELECT paused FROM webhooks.tenant_states WHERE tenant_id = $1', [
        t.tenantId,
      ]);
      return rows[0]?.paused === true ? true : undefined;
    });
    const tenants = await operator('GET', '/admin/v1/tenants');
    expect(tenants.json().data.tenants.find((x: { id: number }) => x.id === t.tenantId).status).toBe('inactive');

    const on = await operator('POST', `/admin/v1/tenants/${t.tenantId}/reactivate`);
    expect(on.json().data.tenant).toMatchObject({ status: 'active', deactivated_at: null });
    await eventually(async () => {
      const { rows } = await sys.db.query('SELECT paused FROM webhooks.tenant_states WHERE tenant_id = $1', [
        t.tenantId,
      ]);
      return rows[0]?.paused === false ? true : undefined;
    });
    const again = await t.api('POST', '/api/v1/loyalty/points/earn', {
      body: { card_id: t.pointsCard, member_id: member.id, purchase_amount: 10 },
    });
    expect(again.status).toBe(200);
    // Webhooks go out again.
    await eventually(async () =>
      t.receiver.received.some(
        (r) => r.event.type === 'points.earned' && r.event.data.transaction_id === again.body.data!.transaction_id,
      )
        ? true
        : undefined,
    );
    expect((await signIn(t.staff, t.tenantId, (await staffEmail(t.tenantId))!)).length).toBeGreaterThan(10);
    const { rows } = await sys.db.query(
      'SELECT action FROM identity.tenant_lifecycle WHERE tenant_id = $1 ORDER BY id',
      [t.tenantId],
    );
    expect(rows.map((r) => r.action)).toEqual(['deactivated', 'reactivated']);
  });

  it('exports every service’s data as JSON Lines, without secrets’ hashes', async () => {
    const res = await operator('POST', `/admin/v1/tenants/${t.tenantId}/export`);
    expect(res.status, res.text).toBe(200);
    const jobs = res.json().data.jobs as { service: string; job: { id: string } }[];
    expect(jobs.map((j) => j.service)).toEqual([...SCHEMAS]);
    const views = await finished(jobs);
    expect(views.map((v) => v.status)).toEqual(SCHEMAS.map(() => 'succeeded'));
    const lines: { entity: string; row: Record<string, unknown> }[] = [];
    for (const j of jobs) {
      const file = await operator('GET', `/admin/v1/jobs/${j.job.id}/result`);
      expect(file.status).toBe(200);
      for (const line of file.text.split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    }
    const entities = new Set(lines.map((l) => l.entity));
    for (const e of [
      'identity.tenants',
      'identity.members',
      'identity.apps',
      'ledger.cards',
      'ledger.journal',
      'webhooks.endpoints',
    ])
      expect(entities, e).toContain(e);
    expect(lines.filter((l) => l.entity === 'ledger.journal').every((l) => l.row.tenant_id === t.tenantId)).toBe(true);
    expect(lines.some((l) => l.entity === 'identity.members' && l.row.email === member.email)).toBe(true);
    expect(lines.some((l) => 'key_hash' in l.row || 'token_hash' in l.row || 'code_hash' in l.row)).toBe(false);
    expect(lines.some((l) => l.row.tenant_id !== undefined && l.row.tenant_id !== t.tenantId)).toBe(false);
  });

  it('purges after the retention period: nothing of the tenant left anywhere, the other tenant untouched', async () => {
    const otherBefore = await rowsOf(other.tenantId);
    expect(Object.keys(await rowsOf(t.tenantId)).length).toBeGreaterThan(5);
    await operator('POST', `/admin/v1/tenants/${t.tenantId}/deactivate`);
    const early = await operator('POST', `/admin/v1/tenants/${t.tenantId}/purge`);
    expect(early.status).toBe(409);
    expect(early.json().error).toMatchObject({ code: 'tenant_retention_pending' });
    sys.clock.advance(31 * DAY);
    const res = await operator('POST', `/admin/v1/tenants/${t.tenantId}/purge`);
    expect(res.status, res.text).toBe(200);
    const views = await finished(res.json().data.jobs);
    expect(
      views.map((v) => v.status),
      JSON.stringify(views),
    ).toEqual(SCHEMAS.map(() => 'succeeded'));
    expect(await rowsOf(t.tenantId)).toEqual({});
    const { rows } = await sys.db.query('SELECT 1 FROM identity.tenants WHERE id = $1', [t.tenantId]);
    expect(rows).toHaveLength(0);
    const { rows: log } = await sys.db.query(
      'SELECT action FROM identity.tenant_lifecycle WHERE tenant_id = $1 ORDER BY id',
      [t.tenantId],
    );
    expect(log.map((r) => r.action)).toEqual([
      'deactivated',
      'reactivated',
      'export_started',
      'deactivated',
      'purge_started',
    ]);
    expect(await rowsOf(other.tenantId)).toEqual(otherBefore);
    // A purged tenant is gone for the operator API too.
    expect((await operator('POST', `/admin/v1/tenants/${t.tenantId}/reactivate`)).status).toBe(404);
  });
});

async function staffEmail(tenantId: number): Promise<string | undefined> {
  const { rows } = await sys.db.query<{ email: string }>(
    'SELECT email FROM identity.staff_users WHERE tenant_id = $1',
    [tenantId],
  );
  return rows[0]?.email;
}
