import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readGatewayConfig, startGateway } from '@loyalty/gateway';
import { apiClient, OPERATOR_TOKEN, startTestSystem, type TestSystem } from '../../../test/support/system.ts';

/**
 * Limits that hold before authentication, per client address. TRUST_PROXY is on so that each test
 * can speak from an address of its own through X-Forwarded-For (the test's TCP peer is always
 * 127.0.0.1); the per-app limit (RATE_LIMIT_MAX) stays at its default and is not what refuses here.
 */
let sys: TestSystem;
const CHECK = '/api/v1/auth/member/check';
const body = { email: 'someone@example.com' };

beforeAll(async () => {
  sys = await startTestSystem({
    // A loaded machine must not turn an answer into a 503: no assertion here is about time.
    env: { TRUST_PROXY: 'true', OPERATOR_RATE_LIMIT_MAX: '30', IP_RATE_LIMIT_MAX: '30', REQUEST_TIMEOUT_MS: '10000' },
  });
});
afterAll(async () => sys?.stop());

const from = (ip: string) => ({ 'x-forwarded-for': ip });

/** How many authentications identity has handled (its NATS metrics, every outcome). */
async function identityAuthentications(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${sys.services.identity!.opsPort}/metrics`)).text();
  return [
    ...text.matchAll(
      /^loyalty_nats_request_duration_seconds_count\{[^}]*operation="internal\.authenticate"[^}]*\} (\d+)/gm,
    ),
  ].reduce((sum, m) => sum + Number(m[1]), 0);
}

describe('failed authentication', () => {
  it('refuses an address past AUTH_FAILURE_LIMIT wrong keys with 429 before asking identity', async () => {
    const t = await sys.tenant();
    const ip = '203.0.113.10';
    const wrong = apiClient(sys.url, { appId: t.appId, apiKey: 'sk_wrong' });
    const before = await identityAuthentications();
    const statuses: number[] = [];
    let last: Awaited<ReturnType<typeof wrong>> | undefined;
    for (let i = 0; i < 25; i++) {
      last = await wrong('POST', CHECK, { body, headers: from(ip) });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([...Array<number>(20).fill(401), ...Array<number>(5).fill(429)]);
    expect(last!.body.error).toMatchObject({ code: 'rate_limited', retry_after_seconds: expect.any(Number) });
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await identityAuthentications()) - before).toBe(20);
    // Without credentials at all, and with another app's id: the address is refused all the same.
    const bare = await fetch(`${sys.url}${CHECK}`, { method: 'POST', headers: from(ip) });
    expect(bare.status).toBe(429);
    const other = await apiClient(sys.url, { appId: 'app_unknown', apiKey: 'sk_guess' })('POST', CHECK, {
      body,
      headers: from(ip),
    });
    expect(other.status).toBe(429);
    expect((await identityAuthentications()) - before).toBe(20);
    // Another address is not affected.
    expect((await wrong('POST', CHECK, { body, headers: from('203.0.113.11') })).status).toBe(401);
  });

  it('keeps serving an app verified recently from the refused address (its budget is its own)', async () => {
    const ip = '203.0.113.20';
    const good = apiClient(sys.url, await sys.tenant());
    const wrong = apiClient(sys.url, { appId: 'app_nope', apiKey: 'sk_wrong' });
    expect((await good('POST', CHECK, { body, headers: from(ip) })).status).toBe(200);
    for (let i = 0; i < 20; i++) expect((await wrong('POST', CHECK, { body, headers: from(ip) })).status).toBe(401);
    expect((await wrong('POST', CHECK, { body, headers: from(ip) })).status).toBe(429);
    // The cached key is checked without identity, so it goes on working; its successes count
    // against the app's own limit, not the address's failures.
    for (let i = 0; i < 5; i++) expect((await good('POST', CHECK, { body, headers: from(ip) })).status).toBe(200);
    // A key this gateway has not verified would need identity: refused from this address for now.
    const fresh = apiClient(sys.url, await sys.tenant());
    expect((await fresh('POST', CHECK, { body, headers: from(ip) })).status).toBe(429);
    expect((await fresh('POST', CHECK, { body, headers: from('203.0.113.21') })).status).toBe(200);
  });

  it('counts successes of valid apps from one address against nothing but their own app limits', async () => {
    const ip = '203.0.113.30';
    const a = apiClient(sys.url, await sys.tenant());
    const b = apiClient(sys.url, await sys.tenant());
    for (let i = 0; i < 25; i++) {
      expect((await a('POST', CHECK, { body, headers: from(ip) })).status).toBe(200);
      expect((await b('POST', CHECK, { body, headers: from(ip) })).status).toBe(200);
    }
  });
});

describe('operator API', () => {
  const admin = (ip: string, token: string) =>
    fetch(`${sys.url}/admin/v1/tenants`, { headers: { authorization: `Bearer ${token}`, ...from(ip) } });

  it('refuses a burst of wrong bearer tokens with 429, then the right token from that address too', async () => {
    const ip = '198.51.100.10';
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) statuses.push((await admin(ip, `wrong-token-${i}-0123456789`)).status);
    expect(statuses).toEqual([...Array<number>(20).fill(401), ...Array<number>(5).fill(429)]);
    // The operator token is checked here without any service: letting the right one through
    // would tell a guesser when it guessed right.
    const right = await admin(ip, OPERATOR_TOKEN);
    expect(right.status).toBe(429);
    expect(await right.json()).toMatchObject({ success: false, error: { code: 'rate_limited' } });
    expect((await admin('198.51.100.11', OPERATOR_TOKEN)).status).toBe(200);
  });

  it('limits operator requests per address (OPERATOR_RATE_LIMIT_MAX)', async () => {
    const ip = '198.51.100.20';
    const statuses: number[] = [];
    for (let i = 0; i < 32; i++) statuses.push((await admin(ip, OPERATOR_TOKEN)).status);
    expect(statuses).toEqual([...Array<number>(30).fill(200), 429, 429]);
  });
});

describe('unknown routes', () => {
  it('limits requests to routes that do not exist per address (IP_RATE_LIMIT_MAX)', async () => {
    const ip = '192.0.2.10';
    const statuses: number[] = [];
    for (let i = 0; i < 32; i++)
      statuses.push((await fetch(`${sys.url}/nothing/here/${i}`, { headers: from(ip) })).status);
    expect(statuses).toEqual([...Array<number>(30).fill(404), 429, 429]);
    const limited = await fetch(`${sys.url}/nothing/here`, { headers: from(ip) });
    expect(await limited.json()).toMatchObject({ success: false, error: { code: 'rate_limited' } });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await fetch(`${sys.url}/nothing/here`, { headers: from('192.0.2.11') })).status).toBe(404);
  });
});

describe('client address', () => {
  it('ignores X-Forwarded-For unless TRUST_PROXY is set', async () => {
    // A second gateway of the same system, with TRUST_PROXY unset.
    const plain = await startGateway(
      readGatewayConfig({ ...sys.envFor('gateway'), TRUST_PROXY: '', IP_RATE_LIMIT_MAX: '3' }),
    );
    try {
      const statuses: number[] = [];
      // Four addresses claimed, one TCP peer: one counter.
      for (const ip of ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4'])
        statuses.push((await fetch(`${plain.url}/nothing`, { headers: from(ip) })).status);
      expect(statuses).toEqual([404, 404, 404, 429]);
    } finally {
      await plain.stop();
    }
  });
});
