import { randomBytes } from 'node:crypto';
import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAs } from '../../../test/support/nats.ts';
import { Metrics, ReplicaCache, startInOrder, type ReplicaCacheOptions } from '../src/index.ts';

/**
 * The replica cache: TTL and size bound, the load guard (a load that started before a forget of its
 * key, or of everything, is not stored), the broadcast between replicas, forget-all when the NATS
 * connection drops and comes back, hit/miss metrics. Against a real NATS server.
 */
const subject = `t${randomBytes(5).toString('hex')}.broadcast.things-changed`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const named = (m: unknown): string[] =>
  typeof m === 'object' && m !== null && 'key' in m && typeof m.key === 'string' ? [m.key] : [];
let a: NatsConnection;
let b: NatsConnection;
const stops: (() => Promise<void>)[] = [];

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(10);
  }
}

async function started(opts: Partial<ReplicaCacheOptions<string>> = {}): Promise<ReplicaCache<string, string>> {
  const cache = new ReplicaCache<string, string>({ name: 'things', ttlMs: 60_000, maxEntries: 100, ...opts });
  stops.push(await startInOrder([cache]));
  return cache;
}

beforeAll(async () => {
  a = await connectAs('admin', { reconnectTimeWait: 50 });
  b = await connectAs('admin');
});
afterAll(async () => {
  for (const stop of stops) await stop();
  await a?.close();
  await b?.close();
});

describe('ReplicaCache', () => {
  it('keeps an entry for its TTL (or a shorter one given with it), then forgets it', async () => {
    const long = await started({ ttlMs: 60_000 });
    long.set('x', 'one', long.ticket());
    long.set('y', 'two', long.ticket(), 20);
    await sleep(100);
    expect(long.get('y')).toBeUndefined();
    expect(long.get('x')).toBe('one');
    const short = await started({ ttlMs: 50 });
    short.set('x', 'one', short.ticket());
    short.set('z', 'three', short.ticket(), 60_000); // never longer than the cache's TTL
    await until(() => short.get('x') === undefined && short.get('z') === undefined, 2_000);
  });

  it('keeps nothing with a TTL of 0, or an entry whose own TTL is over', async () => {
    const off = await started({ ttlMs: 0 });
    expect(off.set('x', 'one', off.ticket())).toBe(false);
    expect(await off.load('x', async () => 'one')).toBe('one');
    expect(off.has('x')).toBe(false);
    const on = await started();
    expect(on.set('x', 'one', on.ticket(), 0)).toBe(false);
  });

  it('holds at most maxEntries, the least recently used going first', async () => {
    const cache = await started({ maxEntries: 3 });
    for (const k of ['a', 'b', 'c']) cache.set(k, k, cache.ticket());
    cache.get('a');
    cache.set('d', 'd', cache.ticket());
    expect(cache.size).toBe(3);
    expect(cache.has('b')).toBe(false);
    expect(['a', 'c', 'd'].every((k) => cache.has(k))).toBe(true);
  });

  it('does not store a load that started before a forget of its key, or of everything', async () => {
    const cache = await started();
    const ticket = cache.ticket();
    cache.forget('x');
    expect(cache.set('x', 'stale', ticket)).toBe(false);
    expect(cache.set('y', 'fresh', ticket)).toBe(true); // another key's forget does not matter
    const before = cache.ticket();
    cache.forgetAll();
    expect(cache.has('y')).toBe(false);
    expect(cache.set('y', 'stale', before)).toBe(false);
    expect(cache.set('y', 'fresh', cache.ticket())).toBe(true);

    let release: (v: string) => void = () => undefined;
    const loading = cache.load('z', () => new Promise<string>((r) => (release = r)));
    cache.forget('z'); // the change arrives while the load is on its way
    release('from before');
    expect(await loading).toBe('from before'); // it answers its own caller
    expect(cache.has('z')).toBe(false);
    expect(await cache.load('z', async () => 'after')).toBe('after');
    expect(cache.get('z')).toBe('after');
  });

  it('shares one load among concurrent misses of a key, but not with a caller that came after a forget', async () => {
    const cache = await started();
    let loads = 0;
    let release!: (v: string) => void;
    const slow = () => {
      loads += 1;
      return new Promise<string>((r) => (release = r));
    };
    const burst = Array.from({ length: 20 }, () => cache.load('s', slow));
    expect(loads).toBe(1);
    release('first');
    expect(await Promise.all(burst)).toEqual(Array(20).fill('first'));
    cache.forget('s');
    const before = cache.load('s', slow);
    const releaseBefore = release;
    cache.forget('s'); // changed again while that load runs: a new caller must not join it
    const after = cache.load('s', slow);
    expect(loads).toBe(3);
    releaseBefore('stale');
    release('fresh');
    expect(await before).toBe('stale');
    expect(await after).toBe('fresh');
    expect(cache.get('s')).toBe('fresh');
  });

  it('forgets on every replica what one announces; a broadcast it cannot read changes nothing', async () => {
    const here = await started({ nc: a, broadcast: { subject, forgets: named } });
    const there = await started({ nc: b, broadcast: { subject, forgets: named } });
    for (const c of [here, there]) {
      c.set('k', 'v', c.ticket());
      c.set('other', 'v', c.ticket());
    }
    await Promise.all([a.flush(), b.flush()]); // both subscriptions are on the server
    b.publish(subject, new TextEncoder().encode('not json'));
    b.publish(subject, new TextEncoder().encode('{"key": 7}'));
    here.announce({ key: 'k' });
    expect(here.has('k')).toBe(false); // at once, here
    await until(() => !there.has('k'));
    expect(here.has('other') && there.has('other')).toBe(true);
  });

  it('forgets everything when its NATS connection drops and comes back', async () => {
    const cache = await started({ nc: a });
    cache.set('k', 'v', cache.ticket());
    const ticket = cache.ticket();
    await a.reconnect();
    await until(() => !cache.has('k'));
    expect(cache.set('k', 'loaded while disconnected', ticket)).toBe(false);
  });

  it('counts hits and misses by cache', async () => {
    const metrics = new Metrics('test');
    const cache = await started({ name: 'counted', metrics });
    await cache.load('k', async () => 'v'); // miss
    await cache.load('k', async () => 'v'); // hit
    cache.get('k'); // hit
    cache.get('absent'); // miss
    cache.get('absent'); // miss
    const values = (await metrics.registry.getSingleMetric('loyalty_cache_lookups_total')?.get())?.values ?? [];
    const count = (result: string) =>
      values.find((v) => v.labels.cache === 'counted' && v.labels.result === result)?.value;
    expect(count('hit')).toBe(2);
    expect(count('miss')).toBe(3);
    expect(await metrics.registry.getSingleMetricAsString('loyalty_cache_entries')).toContain(
      'loyalty_cache_entries{cache="counted",service="test"} 1',
    );
  });
});
