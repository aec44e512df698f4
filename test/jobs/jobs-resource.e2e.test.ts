import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobStore, RESULT_PART_BYTES, withTransaction } from '@loyalty/runtime';
import { apiClient, OPERATOR_TOKEN, startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * The jobs resource: a job lives in the schema of the service that runs it and its id names that
 * service, so the gateway forwards `GET /api/v1/jobs/:job_id` to it. A tenant sees only its own
 * jobs; the operator sees any; a result is streamed part by part, byte for byte.
 */
let sys: TestSystem;
let ledgerJobs: JobStore;
let identityJobs: JobStore;
let a: { tenantId: number; appId: string; apiKey: string };
let b: { tenantId: number; appId: string; apiKey: string };

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger'] });
  ledgerJobs = new JobStore(sys.db, 'ledger');
  identityJobs = new JobStore(sys.db, 'identity');
  // Results need the scope that started their job (programme_manage for these test kinds).
  a = await sys.tenant({ scopes: ['points_read', 'programme_manage'] });
  b = await sys.tenant({ scopes: ['points_read', 'programme_manage'] });
}, 120_000);
afterAll(async () => sys?.stop());

/** A job of `tenantId` in `store`, finished with `result` (or left queued without one). */
async function job(
  store: JobStore,
  tenantId: number,
  result?: { contentType: string; data: Buffer },
  kind = 'test.export',
): Promise<string> {
  const id = await store.create(sys.db, { tenantId, kind, params: { n: 1 }, now: new Date() });
  if (!result) return id;
  const rowId = store.rowId(id);
  if (!rowId) throw new Error(`not a ${id}`);
  await withTransaction(sys.db, (db) =>
    store.finish(
      db,
      rowId,
      {
        status: 'succeeded',
        done: 3,
        total: 3,
        errors: [{ code: 'line_invalid', message: 'line 2', line: 2 }],
        result,
      },
      new Date(),
    ),
  );
  return id;
}

async function download(path: string, creds: { appId: string; apiKey: string }) {
  return fetch(`${sys.url}${path}`, { headers: { 'x-app-id': creds.appId, 'x-api-key': creds.apiKey } });
}

describe('GET /api/v1/jobs/:job_id', () => {
  it("answers the tenant's job, routed to the service that owns it, and no other tenant's", async () => {
    const queued = await job(identityJobs, a.tenantId);
    expect(queued).toMatch(/^job_identity_[0-9a-f-]{36}$/);
    const api = apiClient(sys.url, a);
    const seen = await api('GET', `/api/v1/jobs/${queued}`);
    expect(seen.status).toBe(200);
    expect(seen.body.data).toEqual({
      id: queued,
      kind: 'test.export',
      status: 'queued',
      progress: { done: 0, total: null },
      errors: [],
      created_at: expect.any(String),
      finished_at: null,
    });
    const other = await apiClient(sys.url, b)('GET', `/api/v1/jobs/${queued}`);
    expect(other.status).toBe(404);
    expect(other.body.error?.code).toBe('job_not_found');
  });

  it('answers 404 job_not_found for ids naming no service, malformed ids and unknown uuids', async () => {
    const api = apiClient(sys.url, a);
    for (const id of [
      'job_nobody_0d5c1f9e-7d3a-4c1e-9d1a-3c9d7f0e2b11',
      'not-a-job',
      'job_ledger_0d5c1f9e-7d3a-4c1e-9d1a-3c9d7f0e2b11',
      "job_ledger_'; DROP TABLE ledger.jobs; --",
    ]) {
      const res = await api('GET', `/api/v1/jobs/${encodeURIComponent(id)}`);
      expect(res.status, id).toBe(404);
      expect(res.body.error?.code, id).toBe('job_not_found');
    }
  });

  it('streams a result of several parts byte for byte, with its content type, to its tenant only', async () => {
    const data = Buffer.alloc(RESULT_PART_BYTES * 2 + 12_345);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7919) % 251;
    const id = await job(ledgerJobs, a.tenantId, { contentType: 'application/x-ndjson', data });
    const seen = await apiClient(sys.url, a)('GET', `/api/v1/jobs/${id}`);
    expect(seen.body.data).toMatchObject({
      status: 'succeeded',
      progress: { done: 3, total: 3 },
      result_url: `/api/v1/jobs/${id}/result`,
      errors: [{ code: 'line_invalid', message: 'line 2', line: 2 }],
    });
    const res = await download(`/api/v1/jobs/${id}/result`, a);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    expect(Number(res.headers.get('content-length'))).toBe(data.length);
    expect(Buffer.from(await res.arrayBuffer()).equals(data)).toBe(true);
    const foreign = await download(`/api/v1/jobs/${id}/result`, b);
    expect(foreign.status).toBe(404);
    expect(((await foreign.json()) as { error: { code: string } }).error.code).toBe('job_not_found');
  });

  it('needs the scope that started the job to download its result; any app of the tenant reads its status', async () => {
    const data = Buffer.from('{"member":"data"}');
    const exported = await job(ledgerJobs, a.tenantId, { contentType: 'application/json', data });
    const memberExport = await job(
      identityJobs,
      a.tenantId,
      { contentType: 'application/json', data },
      'member.export',
    );
    const { app } = await sys.admin<{ app: { app_id: string; api_key: string } }>(
      'POST',
      `/admin/v1/tenants/${a.tenantId}/apps`,
      { name: 'reader', scopes: ['points_read', 'cashback_read', 'card_read'] },
    );
    const reader = { appId: app.app_id, apiKey: app.api_key };
    for (const [id, scope, creds] of [
      [exported, 'programme_manage', reader],
      [memberExport, 'members_manage', reader],
      [memberExport, 'members_manage', a],
    ] as const) {
      expect((await apiClient(sys.url, creds)('GET', `/api/v1/jobs/${id}`)).status).toBe(200);
      const res = await download(`/api/v1/jobs/${id}/result`, creds);
      expect(res.status, id).toBe(403);
      expect(((await res.json()) as { error: unknown }).error).toMatchObject({
        code: 'insufficient_scope',
        required_scope: scope,
      });
    }
    const { app: manager } = await sys.admin<{ app: { app_id: string; api_key: string } }>(
      'POST',
      `/admin/v1/tenants/${a.tenantId}/apps`,
      { name: 'data requests', scopes: ['members_manage'] },
    );
    const own = await download(`/api/v1/jobs/${memberExport}/result`, {
      appId: manager.app_id,
      apiKey: manager.api_key,
    });
    expect(own.status).toBe(200);
    expect(Buffer.from(await own.arrayBuffer()).equals(data)).toBe(true);
  });

  it('answers 404 job_result_not_found while a job has no result', async () => {
    const queued = await job(ledgerJobs, a.tenantId);
    const res = await download(`/api/v1/jobs/${queued}/result`, a);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('job_result_not_found');
  });
});

describe('GET /admin/v1/jobs/:job_id', () => {
  const operator = { authorization: `Bearer ${OPERATOR_TOKEN}` };

  it("answers any tenant's job with its tenant, and its result, behind the operator token", async () => {
    const id = await job(ledgerJobs, b.tenantId, { contentType: 'application/json', data: Buffer.from('{"ok":true}') });
    const res = await fetch(`${sys.url}/admin/v1/jobs/${id}`, { headers: operator });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: Record<string, unknown> };
    expect(body.data).toMatchObject({ id, tenant_id: b.tenantId, result_url: `/admin/v1/jobs/${id}/result` });
    const result = await fetch(`${sys.url}/admin/v1/jobs/${id}/result`, { headers: operator });
    expect(result.headers.get('content-type')).toBe('application/json');
    expect(await result.text()).toBe('{"ok":true}');
    const refused = await fetch(`${sys.url}/admin/v1/jobs/${id}`);
    expect(refused.status).toBe(401);
  });
});
