import type { Msg, NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Subjects } from '@loyalty/contracts';
import { readGatewayConfig, startGateway, type RunningGateway } from '@loyalty/gateway';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { connectAs } from '../../../test/support/nats.ts';
import { until } from '../../../test/support/until.ts';
import { signedIn } from '../../../test/support/ledger.ts';
import { createLogger, startInOrder } from '@loyalty/runtime';
import { CredentialResolver } from '../src/credentials.ts';

/**
 * A revoked key stops working on every replica, whatever the timing: a lookup already in flight
 * when the revocation is broadcast must not put the old answer back in the cache, and a replica
 * whose NATS connection was cut forgets what it cached (it may have missed broadcasts).
 */
let sys: TestSystem;
let second: RunningGateway;
let subjects: Subjects;
const CHECK = '/api/v1/auth/member/check';
const body = { email: 'someone@example.com' };

beforeAll(async () => {
  // Long enough for a lookup to be held while identity restarts and the revocation is made.
  sys = await startTestSystem({
    services: ['identity', 'ledger'],
    env: { REQUEST_TIMEOUT_MS: '20000', AUTH_CACHE_TTL_MS: '600000' },
  });
  second = await startGateway(readGatewayConfig(sys.envFor('gateway')));
  subjects = new Subjects(sys.env.SUBJECT_ROOT);
});
afterAll(async () => {
  await second?.stop();
  await sys?.stop();
});

/**
 * A lookup that races a revocation: identity's genuine answer for `data` (valid now) is taken, then
 * identity stops and a stand-in holds the gateway's lookup made by `request`; identity comes back,
 * `revoke` runs and both replicas read its broadcast; only then does the held lookup get the answer
 * from before. Returns the held request's response.
 */
async function answeredFromBefore<R>(
  data: Record<string, string>,
  request: () => Promise<R>,
  revoke: () => Promise<void>,
): Promise<R> {
  const authenticate = subjects.op('identity', 'internal.authenticate');
  const gatewayNc = await connectAs('gateway', { url: sys.env.NATS_URL });
  const identityNc = await connectAs('identity', { url: sys.env.NATS_URL });
  let fake: ReturnType<NatsConnection['subscribe']> | undefined;
  try {
    const genuine = await gatewayNc.request(authenticate, JSON.stringify({ meta: { request_id: 'race' }, data }), {
      timeout: 5_000,
    });
    expect(genuine.json<{ ok: boolean }>().ok).toBe(true);

    // Identity is slow: the gateway's lookup is held here.
    await sys.stopService('identity');
    let held: Msg | undefined;
    fake = identityNc.subscribe(authenticate, { callback: (_e, m) => void (held ??= m) });
    await identityNc.flush();
    const inFlight = request();
    await until(() => held !== undefined);

    // The revocation happens and is broadcast while that lookup is in flight.
    await sys.startService('identity');
    const broadcasts = await gatewayNc.subscribe(subjects.credentialsChanged(), { max: 1 });
    await gatewayNc.flush();
    await revoke();
    for await (const _m of broadcasts) break;
    await Promise.all([sys.gateway, second].map((g) => fetch(`${g.url}/healthz`))); // both have read their sockets

    // Then the held answer (from before the revocation) arrives.
    held!.respond(genuine.data);
    return await inFlight;
  } finally {
    fake?.unsubscribe();
    await gatewayNc.close();
    await identityNc.close();
  }
}

describe('revocation racing a key lookup', () => {
  it('does not cache an answer from before the revocation, on either replica', async () => {
    const t = await sys.tenant();
    const api2 = apiClient(second.url, t);
    expect((await api2('POST', CHECK, { body })).status).toBe(200); // the second replica caches the key
    const inFlight = await answeredFromBefore(
      { app_id: t.appId, api_key: t.apiKey },
      () => apiClient(sys.url, t)('POST', CHECK, { body }),
      async () => void (await sys.admin('POST', `/admin/v1/apps/${t.appId}/revoke`)),
    );
    expect(inFlight.status).toBe(200); // the request it answers was made before the revocation

    for (const url of [sys.url, second.url]) {
      const r = await apiClient(url, t)('POST', CHECK, { body });
      expect(r.status, url).toBe(401);
      expect(r.body.error).toMatchObject({ code: 'invalid_credentials' });
    }
  });
});

/** A member-token operation that changes nothing twice: setting the same PIN again (current_pin is ignored while none is set). */
const PIN = '/api/v1/auth/member/pin';
const pinBody = { pin: '2468', current_pin: '2468' };

describe('member tokens cached at the gateway', () => {
  it('a logout on one replica stops the token on every replica at once', async () => {
    const t = await sys.tenant();
    const [api1, api2] = [apiClient(sys.url, t), apiClient(second.url, t)];
    const member = await signedIn(api1);
    for (const api of [api1, api2])
      expect((await api('POST', PIN, { body: pinBody, token: member.token })).status).toBe(200);

    // Both replicas now trust the token without asking identity: stop identity to prove it.
    await sys.stopService('identity');
    try {
      for (const api of [api1, api2])
        expect((await api('POST', PIN, { body: pinBody, token: member.token })).status).toBe(200);
    } finally {
      await sys.startService('identity');
    }

    const out = await api2('POST', '/api/v1/auth/member/logout', { token: member.token });
    expect(out.status, JSON.stringify(out.body)).toBe(200);
    // No wait: the broadcast was published before identity answered, and each replica reads its
    // socket before this request's reply.
    await Promise.all([sys.gateway, second].map((g) => fetch(`${g.url}/healthz`)));
    for (const api of [api1, api2]) {
      const r = await api('POST', PIN, { body: pinBody, token: member.token });
      expect(r.status).toBe(401);
      expect(r.body.error).toMatchObject({ code: 'invalid_member_token' });
    }
  });

  it('a refresh ends the old token everywhere and the new one works', async () => {
    const t = await sys.tenant();
    const [api1, api2] = [apiClient(sys.url, t), apiClient(second.url, t)];
    const member = await signedIn(api1);
    for (const api of [api1, api2])
      expect((await api('POST', PIN, { body: pinBody, token: member.token })).status).toBe(200);
    const r = await api1('POST', '/api/v1/auth/member/refresh', { token: member.token });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const fresh = r.body.data!.member_token as string;
    await Promise.all([sys.gateway, second].map((g) => fetch(`${g.url}/healthz`)));
    for (const api of [api1, api2]) {
      expect((await api('POST', PIN, { body: pinBody, token: member.token })).status).toBe(401);
      expect((await api('POST', PIN, { body: pinBody, token: fresh })).status).toBe(200);
    }
  });

  it("another tenant's app cannot use a cached token", async () => {
    const [a, b] = [await sys.tenant(), await sys.tenant()];
    const member = await signedIn(apiClient(sys.url, a));
    expect((await apiClient(sys.url, a)('POST', PIN, { body: pinBody, token: member.token })).status).toBe(200);
    const apiB = apiClient(sys.url, b);
    expect((await apiB('POST', CHECK, { body })).status).toBe(200); // b's key cached too
    const r = await apiB('POST', PIN, { body: pinBody, token: member.token });
    expect(r.status).toBe(401);
    expect(r.body.error).toMatchObject({ code: 'invalid_member_token' });
  });

  it('does not cache a token lookup answered from before the logout', async () => {
    const t = await sys.tenant();
    const api1 = apiClient(sys.url, t);
    const member = await signedIn(api1);
    expect((await api1('POST', CHECK, { body })).status).toBe(200); // the key is cached, the token not
    const inFlight = await answeredFromBefore(
      { app_id: t.appId, api_key: t.apiKey, member_token: member.token },
      () => api1('POST', PIN, { body: pinBody, token: member.token }),
      async () => {
        const out = await apiClient(second.url, t)('POST', '/api/v1/auth/member/logout', { token: member.token });
        expect(out.status).toBe(200);
      },
    );
    expect(inFlight.status).toBe(200);

    const r = await api1('POST', PIN, { body: pinBody, token: member.token });
    expect(r.status).toBe(401);
  });
});

describe('NATS reconnect', () => {
  it('forgets every cached key when the connection drops and comes back', async () => {
    const t = await sys.tenant();
    const nc = await connectAs('gateway', { url: sys.env.NATS_URL, reconnectTimeWait: 50 });
    const resolver = new CredentialResolver({
      nc,
      subjects,
      ttlMs: 600_000,
      timeoutMs: 5_000,
      log: createLogger('gateway', 'silent'),
    });
    const stopCaches = await startInOrder(resolver.caches);
    try {
      await resolver.resolve(t.appId, t.apiKey, undefined, 'reconnect-1');
      expect(resolver.isCached(t.appId, t.apiKey)).toBe(true);
      await nc.reconnect();
      await until(() => !resolver.isCached(t.appId, t.apiKey));
      // Served again once reconnected: identity is asked once more and the key cached anew (a
      // lookup that overlapped the reconnect is not cached, so this may take a few tries).
      await until(async () => {
        await resolver.resolve(t.appId, t.apiKey, undefined, 'reconnect-2').catch(() => undefined);
        return resolver.isCached(t.appId, t.apiKey);
      });
    } finally {
      await stopCaches();
      await nc.close();
    }
  });
});

describe('a burst of requests with a key not cached', () => {
  it('asks identity once for the burst, and again for a request made after a revocation', async () => {
    const t = await sys.tenant();
    const nc = await connectAs('gateway', { url: sys.env.NATS_URL });
    const observer = await connectAs('admin', { url: sys.env.NATS_URL });
    const asked = observer.subscribe(subjects.op('identity', 'internal.authenticate'));
    let questions = 0;
    void (async () => {
      for await (const _m of asked) questions += 1;
    })();
    await observer.flush();
    const resolver = new CredentialResolver({
      nc,
      subjects,
      ttlMs: 600_000,
      timeoutMs: 5_000,
      log: createLogger('gateway', 'silent'),
    });
    const stopCaches = await startInOrder(resolver.caches);
    try {
      const burst = await Promise.all(
        Array.from({ length: 30 }, (_x, i) => resolver.resolve(t.appId, t.apiKey, undefined, `burst-${i}`)),
      );
      expect(new Set(burst.map((r) => r.tenant_id))).toEqual(new Set([t.tenantId]));
      await observer.flush();
      expect(questions).toBe(1);
      // A revocation forgets the key: the next request asks again and is refused.
      await sys.admin('POST', `/admin/v1/apps/${t.appId}/revoke`);
      await until(() => !resolver.isCached(t.appId, t.apiKey));
      await expect(resolver.resolve(t.appId, t.apiKey, undefined, 'after')).rejects.toMatchObject({
        code: 'invalid_credentials',
      });
      expect(questions).toBe(2);
    } finally {
      await stopCaches();
      asked.unsubscribe();
      await observer.close();
      await nc.close();
    }
  });
});
