import type { FastifyRateLimitStore } from '@fastify/rate-limit';
import type { ClientContext, Redis, Result } from 'ioredis';

// The script below as a command of the client and of its pipelines (ioredis's typed defineCommand).
declare module 'ioredis' {
  interface RedisCommander<Context extends ClientContext> {
    loyaltyRateAdd(key: string, n: number, windowMs: number): Result<[number, number], Context>;
  }
}

// Add a replica's requests to the shared counter of a window; the first addition starts the window.
const ADD = `
local current = redis.call('INCRBY', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
return {current, ttl}`;

interface Window {
  /** The shared count as Redis last answered it (every replica's flushed requests). */
  shared: number;
  /** Counted here, not yet sent to Redis. */
  pending: number;
  /** Sent to Redis, answer not back yet. */
  sending: number;
  resetAt: number;
  windowMs: number;
}

export interface Count {
  current: number;
  /** Milliseconds until the window ends. */
  ttl: number;
}

/**
 * A store for @fastify/rate-limit whose counters are shared by every gateway replica through
 * Redis, without a Redis round trip per request (that round trip was ~24 % of the gateway's CPU
 * under load). Each replica counts locally and adds its requests to the shared counter every
 * `syncMs` (one pipelined script call per active app), learning the others' counts and the
 * window's remaining time in the same answer. A request is judged on the shared count plus what
 * this replica counted since. The price: requests other replicas took in the last `syncMs` are
 * not seen yet, so N replicas can together admit up to (N - 1) x their rate x `syncMs` beyond the
 * limit. One replica is exact. While Redis is unreachable every replica goes on counting on its
 * own (no request is refused for Redis's sake) and syncs again when it is back. The limit is per
 * app across all routes (the store has one key space; `child` returns it); the per-address limits
 * of plugins/rate-limit.ts count in the same key space through `hit`/`peek`, under prefixed keys.
 */
export function sharedRateLimitStore(redis: Redis, prefix: string, syncMs: number) {
  const windows = new Map<string, Window>();
  if (typeof redis.loyaltyRateAdd !== 'function') redis.defineCommand('loyaltyRateAdd', { numberOfKeys: 1, lua: ADD });
  let timer: ReturnType<typeof setTimeout> | undefined;

  function schedule(delayMs: number) {
    if (timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      void sync();
    }, delayMs);
    timer.unref();
  }

  async function sync(): Promise<void> {
    if (await syncWindows(redis, prefix, windows)) schedule(syncMs);
  }

  function hit(key: string, windowMs: number): Count {
    const now = Date.now();
    let w = windows.get(key);
    if (!w || (w.resetAt <= now && w.sending === 0)) {
      w = { shared: 0, pending: 0, sending: 0, resetAt: now + windowMs, windowMs };
      windows.set(key, w);
    }
    w.pending += 1;
    schedule(syncMs);
    return { current: w.shared + w.sending + w.pending, ttl: Math.max(0, w.resetAt - now) };
  }

  class SharedStore implements FastifyRateLimitStore {
    incr: FastifyRateLimitStore['incr'] = (key, cb, timeWindow) => cb(null, hit(key, timeWindow));

    child(): FastifyRateLimitStore {
      return this;
    }
  }

  return {
    Store: SharedStore,
    /** Count one request against `key` (the same counters as `Store`; callers prefix their keys). */
    hit,
    /**
     * The count of `key`'s current window without adding to it: what this replica counted plus
     * the other replicas' requests as of the last sync. A key this replica has not counted yet
     * reads 0 until it counts one (the first failure from an address is always let through).
     */
    peek(key: string): Count {
      const now = Date.now();
      const w = windows.get(key);
      if (!w || w.resetAt <= now) return { current: 0, ttl: 0 };
      return { current: w.shared + w.sending + w.pending, ttl: w.resetAt - now };
    },
    /** Send what is counted now (tests; shutdown). */
    flush: async () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
      await sync();
    },
  };
}

/**
 * Adds every window's pending requests to its shared counter in Redis (one pipeline) and takes the
 * shared count and remaining time back; forgets idle, ended windows. Returns whether requests were
 * counted meanwhile (another sync is due).
 */
async function syncWindows(redis: Redis, prefix: string, windows: Map<string, Window>): Promise<boolean> {
  const now = Date.now();
  const batch: [string, Window, number][] = [];
  for (const [key, w] of windows) {
    if (w.pending > 0) {
      batch.push([key, w, w.pending]);
      w.sending += w.pending;
      w.pending = 0;
    } else if (w.resetAt <= now && w.sending === 0) {
      windows.delete(key); // an idle, ended window
    }
  }
  if (batch.length === 0) return false;
  const pipeline = redis.pipeline();
  for (const [key, w, n] of batch) pipeline.loyaltyRateAdd(prefix + key, n, w.windowMs);
  const results = await pipeline.exec().catch(() => null);
  const at = Date.now();
  batch.forEach(([, w, n], i) => {
    w.sending -= n;
    const r = results?.[i];
    const counted = r && !r[0] ? countAndTtl(r[1]) : undefined;
    if (!counted) {
      w.shared += n; // Redis unreachable: keep counting here
      return;
    }
    const [current, ttl] = counted;
    w.shared = current; // a later batch still in flight is counted by `sending`
    w.resetAt = at + ttl;
  });
  return [...windows.values()].some((w) => w.pending > 0);
}

/** The script's answer `{current, ttl}`; undefined for anything else (counted as unreachable). */
function countAndTtl(answer: unknown): [number, number] | undefined {
  if (!Array.isArray(answer) || answer.length !== 2) return undefined;
  const [current, ttl]: unknown[] = answer;
  return typeof current === 'number' && typeof ttl === 'number' ? [current, ttl] : undefined;
}
