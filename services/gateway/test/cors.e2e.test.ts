import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readGatewayConfig, startGateway, type RunningGateway } from '@loyalty/gateway';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';

/**
 * CORS: off by default (the test system's gateway), on for the origins of CORS_ORIGINS (a second
 * gateway of the same system).
 */
let sys: TestSystem;
let withCors: RunningGateway;
const SHOP = 'https://shop.example.com';
const CHECK = '/api/v1/auth/member/check';
const body = { email: 'someone@example.com' };

beforeAll(async () => {
  sys = await startTestSystem();
  withCors = await startGateway(
    readGatewayConfig({ ...sys.envFor('gateway'), CORS_ORIGINS: `${SHOP}, http://localhost:5173` }),
  );
});
afterAll(async () => {
  await withCors?.stop();
  await sys?.stop();
});

const preflight = (url: string, path: string, origin: string) =>
  fetch(`${url}${path}`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'x-app-id, x-api-key, content-type',
    },
  });

const corsHeaders = (res: { headers: Headers }) =>
  [...res.headers.keys()].filter((h) => h.startsWith('access-control-'));

describe('CORS off (CORS_ORIGINS unset)', () => {
  it('answers a preflight in the envelope as any unsupported method, without CORS headers', async () => {
    const res = await preflight(sys.url, CHECK, SHOP);
    expect(res.status).toBe(405);
    expect(await res.json()).toMatchObject({ success: false, error: { code: 'method_not_allowed' } });
    expect(corsHeaders(res)).toEqual([]);
    const unknown = await preflight(sys.url, '/api/v1/nothing-here', SHOP);
    expect(unknown.status).toBe(404);
    expect(corsHeaders(unknown)).toEqual([]);
    const call = await apiClient(sys.url, await sys.tenant())('POST', CHECK, { body, headers: { origin: SHOP } });
    expect(call.status).toBe(200);
    expect(corsHeaders(call)).toEqual([]);
  });
});

describe('CORS on, allowed origin', () => {
  it('answers a preflight on any API route with 204 and the CORS headers', async () => {
    for (const path of [CHECK, '/api/v1/loyalty/points/balance', '/admin/v1/tenants']) {
      const res = await preflight(withCors.url, path, SHOP);
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(SHOP);
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      expect(res.headers.get('access-control-allow-methods')?.split(', ').sort()).toEqual([
        'DELETE',
        'GET',
        'PATCH',
        'POST',
        'PUT',
      ]);
      expect(res.headers.get('access-control-allow-headers')).toBe(
        'X-App-Id, X-Api-Key, X-Member-Token, Idempotency-Key, Content-Type, X-Request-Id',
      );
      expect(res.headers.get('access-control-expose-headers')).toBe(
        'X-Request-Id, Retry-After, Idempotent-Replayed, RateLimit, RateLimit-Policy, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset',
      );
      expect(Number(res.headers.get('access-control-max-age'))).toBeGreaterThan(0);
      expect(res.headers.get('vary')).toMatch(/\bOrigin\b/);
    }
    // Each listed origin is echoed back as it is, never `*`.
    const local = await preflight(withCors.url, CHECK, 'http://localhost:5173');
    expect(local.status).toBe(204);
    expect(local.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
  });

  it('marks actual requests (successes and failures) from the origin readable', async () => {
    const api = apiClient(withCors.url, await sys.tenant());
    const ok = await api('POST', CHECK, { body, headers: { origin: SHOP } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(SHOP);
    expect(ok.headers.get('access-control-expose-headers')).toContain('RateLimit');
    expect(ok.headers.get('vary')).toMatch(/\bOrigin\b/);
    const denied = await fetch(`${withCors.url}${CHECK}`, { method: 'POST', headers: { origin: SHOP } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe(SHOP);
  });
});

describe('CORS on, other origins', () => {
  it('gives a disallowed origin (or none) no CORS headers; its preflight is a 405/404 in the envelope', async () => {
    for (const origin of ['https://evil.example.com', 'https://shop.example.com.evil.example', 'null']) {
      const res = await preflight(withCors.url, CHECK, origin);
      expect(res.status).toBe(405);
      expect(await res.json()).toMatchObject({ success: false, error: { code: 'method_not_allowed' } });
      expect(corsHeaders(res)).toEqual([]);
      const unknown = await preflight(withCors.url, '/api/v1/nothing-here', origin);
      expect(unknown.status).toBe(404);
      expect(corsHeaders(unknown)).toEqual([]);
    }
    const api = apiClient(withCors.url, await sys.tenant());
    const call = await api('POST', CHECK, { body, headers: { origin: 'https://evil.example.com' } });
    expect(call.status).toBe(200);
    expect(corsHeaders(call)).toEqual([]);
    const noOrigin = await api('POST', CHECK, { body });
    expect(corsHeaders(noOrigin)).toEqual([]);
  });

  it('refuses a configuration with a wildcard or an origin that is not exact', () => {
    for (const bad of ['*', 'https://shop.example.com/', 'shop.example.com', 'https://*.example.com'])
      expect(() => readGatewayConfig({ ...sys.envFor('gateway'), CORS_ORIGINS: bad })).toThrow(/CORS_ORIGINS/);
    expect(readGatewayConfig({ ...sys.envFor('gateway') }).CORS_ORIGINS).toEqual([]);
  });
});
