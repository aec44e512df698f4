import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readGatewayConfig, startGateway } from '@loyalty/gateway';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';

/**
 * An Idempotency-Key is one tenant's, across all operations, for 24 hours: the gateway binds it in
 * Redis to the first operation it was used on; each service keeps replaying its own operation.
 */
let sys: TestSystem;
let tenantId: number;
let appId: string;
let apiKey: string;
let api: ReturnType<typeof apiClient>;
let card: number;
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
const REGISTER = '/api/v1/auth/member/register';
const EARN = '/api/v1/cashback/cashback/earn';

beforeAll(async () => {
  // A loaded machine must not turn an answer into a 503: no assertion here is about time.
  sys = await startTestSystem({ services: ['identity', 'ledger'], env: { REQUEST_TIMEOUT_MS: '10000' } });
  const t = await sys.tenant();
  ({ tenantId, appId, apiKey } = t);
  api = apiClient(sys.url, t);
  const created = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenantId}/cards`, {
    name: 'Cashback card',
    reward_system: 'cashback',
    currency: 'EUR',
    cashback_config: { cashback_percentage: 5, cashback_min_amount: 10, cashback_max_amount: 50 },
  });
  card = created.card.id;
});
afterAll(async () => {
  redis.disconnect();
  await sys?.stop();
});

let n = 0;
const email = (tag: string) => `${tag}${++n}.${process.pid}.${Date.now()}@example.com`;
const person = () => {
  n += 1;
  return { name: `Idem ${n}`, email: email('idem'), phone: `+1555${String(2_000_000 + n * 7919).slice(-7)}` };
};
const earn = (key: string) =>
  api('POST', EARN, {
    body: { card_id: card, email: email('earn'), member_name: 'Earner', purchase_amount: 20 },
    headers: { 'idempotency-key': key },
  });
const registered = async (address: string) =>
  (await api('POST', '/api/v1/auth/member/check', { body: { email: address } })).body.data!.exists;

describe('Idempotency-Key across operations', () => {
  it('refuses a key used on a cashback earn when it comes again on member.register; nothing is registered', async () => {
    const key = randomUUID();
    expect((await earn(key)).status).toBe(200);
    const p = person();
    const r = await api('POST', REGISTER, { body: p, headers: { 'idempotency-key': key } });
    expect(r.status).toBe(409);
    expect(r.body).toEqual({
      success: false,
      error: { code: 'idempotency_key_reused', message: expect.stringContaining('another operation') },
    });
    expect(await registered(p.email)).toBe(false);
  });

  it('passes the same operation under the same key to its service, which replays it as before', async () => {
    const key = randomUUID();
    const body = { card_id: card, email: email('replay'), member_name: 'Earner', purchase_amount: 20 };
    const headers = { 'idempotency-key': key };
    const first = await api('POST', EARN, { body, headers });
    const retry = await api('POST', EARN, { body, headers });
    expect(first.status).toBe(200);
    expect(retry.status).toBe(200);
    expect(retry.body.data).toEqual(first.body.data);
    // Other parameters under the same key on the same operation: the owning service refuses them.
    const other = await api('POST', EARN, { body: { ...body, purchase_amount: 30 }, headers });
    expect(other.status).toBe(409);
    expect(other.body.error).toMatchObject({ code: 'idempotency_key_reused' });
  });

  it('keys are per tenant: another tenant may use the same key on another operation', async () => {
    const key = randomUUID();
    expect((await earn(key)).status).toBe(200);
    const otherTenant = apiClient(sys.url, await sys.tenant());
    expect((await otherTenant('POST', REGISTER, { body: person(), headers: { 'idempotency-key': key } })).status).toBe(
      200,
    );
  });

  it('binds the key for 24 hours, after which it may be used on another operation', async () => {
    const key = randomUUID();
    expect((await earn(key)).status).toBe(200);
    const redisKey = `${sys.env.REDIS_KEY_PREFIX}idem:${tenantId}:${key}`;
    expect(await redis.get(redisKey)).toBe('cashback.earn');
    const ttl = await redis.pttl(redisKey);
    expect(ttl).toBeGreaterThan(23 * 3_600_000);
    expect(ttl).toBeLessThanOrEqual(24 * 3_600_000);
    await redis.del(redisKey); // what 24 hours do
    const p = person();
    expect((await api('POST', REGISTER, { body: p, headers: { 'idempotency-key': key } })).status).toBe(200);
    expect(await registered(p.email)).toBe(true);
  });
});

describe('Idempotency-Key without Redis', () => {
  it('refuses keyed requests with 503 (the guarantee is never dropped silently) and serves the others', async () => {
    // A second gateway of the same system whose Redis cannot be reached.
    const down = await startGateway(readGatewayConfig({ ...sys.envFor('gateway'), REDIS_URL: 'redis://127.0.0.1:1' }));
    try {
      const client = apiClient(down.url, { appId, apiKey });
      const p = person();
      const keyed = await client('POST', REGISTER, { body: p, headers: { 'idempotency-key': randomUUID() } });
      expect(keyed.status).toBe(503);
      expect(keyed.body).toEqual({
        success: false,
        error: { code: 'service_unavailable', message: expect.any(String) },
      });
      expect(await registered(p.email)).toBe(false);
      expect((await client('POST', REGISTER, { body: p })).status).toBe(200);
    } finally {
      await down.stop();
    }
  });
});
