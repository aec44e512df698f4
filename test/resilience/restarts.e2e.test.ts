import { afterAll, beforeAll, expect, it } from 'vitest';
import { PrivateNats, PrivatePostgres, PrivateRedis } from '../support/private-servers.ts';
import { apiClient, startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * The services survive a restart of PostgreSQL, NATS and Redis without being restarted
 * themselves: meanwhile callers get a retryable 503 (or are served), never a crash or a 500;
 * afterwards everything answers again. Private servers, so the machine's own stay up.
 */
const postgres = new PrivatePostgres();
const nats = new PrivateNats();
const redis = new PrivateRedis();
let sys: TestSystem;
let api: ReturnType<typeof apiClient>;

beforeAll(async () => {
  await Promise.all([postgres.start(), nats.start(), redis.start()]);
  sys = await startTestSystem({
    postgresAdminUrl: postgres.adminUrl,
    env: { NATS_URL: nats.url, REDIS_URL: redis.url, REQUEST_TIMEOUT_MS: '1000', AUTH_CACHE_TTL_MS: '0' },
  });
  api = apiClient(sys.url, await sys.tenant());
}, 120_000);

afterAll(async () => {
  await sys?.stop().catch(() => undefined);
  await Promise.all([postgres.destroy(), nats.destroy(), redis.destroy()]);
});

const check = () => api('POST', '/api/v1/auth/member/check', { body: { email: 'someone@example.com' } });

async function recovers(): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const r = await check().catch(() => undefined);
    if (r?.status === 200) return;
    if (r) {
      expect(r.status).toBe(503);
      expect(r.body).toMatchObject({ success: false, error: { code: 'service_unavailable' } });
    }
    if (Date.now() > deadline) throw new Error('did not recover');
    await new Promise((res) => setTimeout(res, 200));
  }
}

it('answers 503 while PostgreSQL is down and serves again once it is back', async () => {
  expect((await check()).status).toBe(200);
  await postgres.stop();
  const during = await check();
  expect(during.status).toBe(503);
  expect(during.body).toMatchObject({ success: false, error: { code: 'service_unavailable' } });
  await postgres.start();
  await recovers();
}, 60_000);

it('reconnects to NATS after a restart', async () => {
  await nats.stop();
  const during = await check();
  expect(during.status).toBe(503);
  await nats.start();
  await recovers();
}, 60_000);

it('keeps serving while Redis restarts (the rate limit fails open) and uses it again after', async () => {
  await redis.stop();
  expect((await check()).status).toBe(200);
  await redis.start();
  await recovers();
}, 60_000);
