import { randomUUID } from 'node:crypto';
import type { FastifyRateLimitStore } from '@fastify/rate-limit';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { sharedRateLimitStore } from '../src/rate-limit-store.ts';

/** Against the real Redis: two stores on one prefix stand for two gateway replicas. */
const redis = new Redis(process.env.LOYALTY_REDIS_URL || 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
afterAll(() => redis.disconnect());

const incr = (store: FastifyRateLimitStore, key: string, windowMs = 60_000) =>
  new Promise<{ current: number; ttl: number }>((resolve, reject) =>
    store.incr(key, (e, r) => (e ? reject(e) : resolve(r!)), windowMs, 10),
  );

describe('shared rate-limit store', () => {
  it('counts every request of one replica exactly, at once', async () => {
    const prefix = `test:${randomUUID()}:`;
    const a = sharedRateLimitStore(redis, prefix, 60_000);
    const store = new a.Store();
    const seen = [];
    for (let i = 0; i < 5; i++) seen.push((await incr(store, 'app-1')).current);
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect((await incr(store, 'app-2')).current).toBe(1); // per key
    await a.flush();
    expect(Number(await redis.get(`${prefix}app-1`))).toBe(6 - 1);
    expect(await redis.pttl(`${prefix}app-1`)).toBeGreaterThan(50_000);
  });

  it("adds the other replicas' requests after a sync, with the window of Redis", async () => {
    const prefix = `test:${randomUUID()}:`;
    const one = sharedRateLimitStore(redis, prefix, 60_000);
    const two = sharedRateLimitStore(redis, prefix, 60_000);
    const s1 = new one.Store();
    const s2 = new two.Store();
    for (let i = 0; i < 3; i++) await incr(s1, 'app');
    await one.flush();
    await incr(s2, 'app'); // 1 locally: replica two has not heard of the others yet
    await two.flush(); // learns 4 in all
    const next = await incr(s2, 'app');
    expect(next.current).toBe(5);
    expect(next.ttl).toBeGreaterThan(50_000);
    expect(next.ttl).toBeLessThanOrEqual(60_000);
  });

  it('goes on counting on its own while Redis cannot be reached', async () => {
    const down = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    const s = sharedRateLimitStore(down, 'test:down:', 60_000);
    const store = new s.Store();
    await incr(store, 'app');
    await s.flush();
    expect((await incr(store, 'app')).current).toBe(2);
    down.disconnect();
  });
});
