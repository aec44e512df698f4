import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, OPERATOR_TOKEN, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { connectAs } from '../../../test/support/nats.ts';

let sys: TestSystem;
const CHECK = '/api/v1/auth/member/check';
const body = { email: 'someone@example.com' };

beforeAll(async () => {
  sys = await startTestSystem({ env: { RATE_LIMIT_MAX: '5', RATE_LIMIT_WINDOW_MS: '60000' } });
});
afterAll(async () => sys?.stop());

describe('application credentials', () => {
  it('refuses a call without credentials', async () => {
    const res = await fetch(`${sys.url}${CHECK}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({
      success: false,
      error: { code: 'missing_credentials', message: expect.any(String) },
    });
  });

  it('refuses a wrong key and an unknown app alike', async () => {
    const t = await sys.tenant();
    for (const creds of [
      { appId: t.appId, apiKey: 'sk_wrong' },
      { appId: 'app_unknown', apiKey: t.apiKey },
    ]) {
      const r = await apiClient(sys.url, creds)('POST', CHECK, { body });
      expect(r.status).toBe(401);
      expect(r.body.error).toMatchObject({ code: 'invalid_credentials' });
    }
  });

  it('a revoked key stops working at once, even when the gateway had it cached', async () => {
    const t = await sys.tenant();
    const api = apiClient(sys.url, t);
    expect((await api('POST', CHECK, { body })).status).toBe(200);
    await sys.admin('POST', `/admin/v1/apps/${t.appId}/revoke`);
    await waitFor(async () => (await api('POST', CHECK, { body })).status === 401);
    const r = await api('POST', CHECK, { body });
    expect(r.body.error).toMatchObject({ code: 'invalid_credentials' });
  });

  it('rotation: the old key stops, the new key works', async () => {
    const t = await sys.tenant();
    expect((await apiClient(sys.url, t)('POST', CHECK, { body })).status).toBe(200);
    const { app } = await sys.admin<{ app: { api_key: string } }>('POST', `/admin/v1/apps/${t.appId}/rotate-key`);
    await waitFor(async () => (await apiClient(sys.url, t)('POST', CHECK, { body })).status === 401);
    expect((await apiClient(sys.url, { appId: t.appId, apiKey: app.api_key })('POST', CHECK, { body })).status).toBe(
      200,
    );
  });

  it('stores keys only as hashes', async () => {
    const t = await sys.tenant();
    const { rows } = await sys.db.query('SELECT key_hash FROM identity.apps WHERE id = $1', [t.appId]);
    expect(rows[0].key_hash.toString('utf8')).not.toContain(t.apiKey);
    expect(rows[0].key_hash.length).toBe(32);
  });
});

describe('envelope and routing', () => {
  it('answers a malformed JSON body with the failure envelope', async () => {
    const t = await sys.tenant();
    const r = await apiClient(sys.url, t)('POST', CHECK, { rawBody: '{"email": ' });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ success: false, error: { code: 'invalid_json', message: expect.any(String) } });
  });

  it('answers a body that is not an object with a validation error', async () => {
    const t = await sys.tenant();
    const r = await apiClient(sys.url, t)('POST', CHECK, { rawBody: '[1,2]' });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'validation_error' });
  });

  it('answers an unknown route and an unsupported method with the failure envelope', async () => {
    const unknown = await fetch(`${sys.url}/api/v1/nothing-here`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({
      success: false,
      error: { code: 'route_not_found', message: expect.any(String) },
    });
    const method = await fetch(`${sys.url}${CHECK}`, { method: 'DELETE' });
    expect(method.status).toBe(405);
    expect(method.headers.get('allow')).toBe('POST');
    expect(await method.json()).toMatchObject({ success: false, error: { code: 'method_not_allowed' } });
  });

  it('carries a request id in a response header, keeping a valid one the client sent', async () => {
    const generated = await fetch(`${sys.url}/healthz`);
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const given = await fetch(`${sys.url}/healthz`, { headers: { 'x-request-id': 'client-req-42' } });
    expect(given.headers.get('x-request-id')).toBe('client-req-42');
  });

  it('serves the OpenAPI 3.1 document and the browsable reference', async () => {
    const doc = (await (await fetch(`${sys.url}/openapi.json`)).json()) as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
    };
    expect(doc.openapi).toBe('3.1.0');
    for (const op of ['check', 'register', 'request-otp', 'verify-otp', 'refresh', 'logout']) {
      expect(doc.paths[`/api/v1/auth/member/${op}`]).toHaveProperty('post');
    }
    const docs = await fetch(`${sys.url}/docs/`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('swagger');
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/admin/'))).toEqual([]);
  });

  it('serves the operator API in its own document with bearer security', async () => {
    const doc = (await (await fetch(`${sys.url}/admin/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { security: unknown }>>;
      components: { securitySchemes: Record<string, unknown> };
    };
    expect(doc.paths['/admin/v1/tenants']?.post?.security).toEqual([{ OperatorToken: [] }]);
    expect(doc.components.securitySchemes).toEqual({
      OperatorToken: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    });
    expect(Object.keys(doc.paths).every((p) => p.startsWith('/admin/v1/'))).toBe(true);
    const ui = await fetch(`${sys.url}/admin/docs/`);
    expect(ui.status).toBe(200);
    expect(await ui.text()).toContain('swagger');
  });

  it('tags both documents with a strong ETag and answers 304 to If-None-Match', async () => {
    for (const path of ['/openapi.json', '/admin/openapi.json']) {
      const first = await fetch(`${sys.url}${path}`);
      const etag = first.headers.get('etag');
      expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
      const again = await fetch(`${sys.url}${path}`, { headers: { 'if-none-match': etag! } });
      expect(again.status).toBe(304);
      const other = await fetch(`${sys.url}${path}`, { headers: { 'if-none-match': '"stale"' } });
      expect(other.status).toBe(200);
    }
    expect((await fetch(`${sys.url}/openapi.json`)).headers.get('etag')).not.toBe(
      (await fetch(`${sys.url}/admin/openapi.json`)).headers.get('etag'),
    );
  });

  it('protects the operator API with the operator token', async () => {
    for (const auth of [undefined, 'Bearer wrong-token-wrong-token', `Bearer ${OPERATOR_TOKEN}x`]) {
      const res = await fetch(`${sys.url}/admin/v1/tenants`, { headers: auth ? { authorization: auth } : {} });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ success: false, error: { code: 'invalid_operator_token' } });
    }
  });
});

describe('caching', () => {
  it('sends Cache-Control: no-store on every answer of both APIs, failures included', async () => {
    const t = await sys.tenant();
    const api = apiClient(sys.url, t);
    const answers: [string, Response | Awaited<ReturnType<typeof api>>][] = [
      ['success', await api('POST', CHECK, { body })],
      ['401', await fetch(`${sys.url}${CHECK}`, { method: 'POST' })],
      ['400', await api('POST', CHECK, { rawBody: '{' })],
      ['404', await fetch(`${sys.url}/api/v1/nothing-here`)],
      ['405', await fetch(`${sys.url}${CHECK}`, { method: 'DELETE' })],
      ['414', await fetch(`${sys.url}/api/v1/loyalty/claims/${'1'.repeat(200)}`)],
      ['admin', await fetch(`${sys.url}/admin/v1/tenants`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })],
      ['admin 401', await fetch(`${sys.url}/admin/v1/tenants`)],
    ];
    for (const [what, res] of answers) expect([what, res.headers.get('cache-control')]).toEqual([what, 'no-store']);
    expect(answers.map(([, r]) => r.status)).toEqual([200, 401, 400, 404, 405, 414, 200, 401]);
    // Not the health check: only the APIs' answers.
    expect((await fetch(`${sys.url}/healthz`)).headers.get('cache-control')).toBeNull();
  });
});

describe('rate limit', () => {
  it('answers 429 rate_limited with Retry-After once an app passes its limit, per app', async () => {
    const a = apiClient(sys.url, await sys.tenant());
    const b = apiClient(sys.url, await sys.tenant());
    for (let i = 0; i < 5; i++) {
      const r = await a('POST', CHECK, { body });
      expect(r.status).toBe(200);
      // The IETF draft's fields (policy: 5 per 60 s; state: requests left, seconds to the reset)
      // next to the X-RateLimit-* ones, with the same values.
      expect(r.headers.get('ratelimit-policy')).toBe('"default";q=5;w=60');
      const reset = Number(r.headers.get('x-ratelimit-reset'));
      expect(reset).toBeGreaterThan(0);
      expect(reset).toBeLessThanOrEqual(60);
      expect(r.headers.get('ratelimit')).toBe(`"default";r=${4 - i};t=${reset}`);
      expect(r.headers.get('x-ratelimit-limit')).toBe('5');
      expect(r.headers.get('x-ratelimit-remaining')).toBe(String(4 - i));
    }
    const limited = await a('POST', CHECK, { body });
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // The window is the configured one (not the time left), the wait is the time left.
    expect(limited.body.error).toEqual({
      code: 'rate_limited',
      message: `Rate limit of 5 requests per 60 seconds reached; retry after ${retryAfter} second${retryAfter === 1 ? '' : 's'}.`,
      retry_after_seconds: retryAfter,
    });
    expect(limited.headers.get('ratelimit-policy')).toBe('"default";q=5;w=60');
    expect(limited.headers.get('ratelimit')).toBe(`"default";r=0;t=${limited.headers.get('x-ratelimit-reset')}`);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(limited.headers.get('cache-control')).toBe('no-store');
    expect((await b('POST', CHECK, { body })).status).toBe(200);
  });
});

describe('service unavailable', () => {
  it('answers 503 service_unavailable in the envelope while identity is down, and serves again after', async () => {
    const cached = apiClient(sys.url, await sys.tenant());
    const fresh = await sys.tenant();
    expect((await cached('POST', CHECK, { body })).status).toBe(200);
    await sys.stopService('identity');
    try {
      for (const r of [
        await cached('POST', CHECK, { body }),
        await apiClient(sys.url, fresh)('POST', CHECK, { body }),
      ]) {
        expect(r.status).toBe(503);
        expect(r.body).toEqual({ success: false, error: { code: 'service_unavailable', message: expect.any(String) } });
      }
    } finally {
      await sys.startService('identity');
    }
    expect((await cached('POST', CHECK, { body })).status).toBe(200);
  });
});

describe('service that does not answer in time', () => {
  it('answers 503 service_unavailable after REQUEST_TIMEOUT_MS when the service hangs', async () => {
    const t = await sys.tenant();
    const api = apiClient(sys.url, t);
    expect((await api('POST', CHECK, { body })).status).toBe(200); // key now cached by the gateway
    await sys.stopService('identity');
    // Something takes the identity subjects but never replies (a hung replica).
    const nc = await connectAs('identity', { url: sys.env.NATS_URL });
    const sub = nc.subscribe(`${sys.env.SUBJECT_ROOT}.identity.>`, { callback: () => undefined });
    await nc.flush();
    try {
      const started = Date.now();
      const r = await api('POST', CHECK, { body });
      expect(r.status).toBe(503);
      expect(r.body).toEqual({ success: false, error: { code: 'service_unavailable', message: expect.any(String) } });
      expect(Date.now() - started).toBeGreaterThanOrEqual(3900); // REQUEST_TIMEOUT_MS is 4000 in tests
    } finally {
      sub.unsubscribe();
      await nc.close();
      await sys.startService('identity');
    }
  });
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
