import { describe, expect, it } from 'vitest';
import { backoffMs, retryAfterMs, retryingFetch } from '../src/retry.ts';

/** A fetch that answers the queued outcomes in turn and records what it was sent. */
function scripted(outcomes: (Response | Error)[]) {
  const seen: { method: string; key: string | null; body: string }[] = [];
  const fetch = async (request: Request) => {
    seen.push({ method: request.method, key: request.headers.get('idempotency-key'), body: await request.text() });
    const next = outcomes.shift();
    if (!next) throw new Error('no more outcomes');
    if (next instanceof Error) throw next;
    return next;
  };
  return { fetch, seen };
}
const status = (code: number, headers: Record<string, string> = {}, body: unknown = {}) =>
  new Response(JSON.stringify(body), { status: code, headers });
const post = (headers: Record<string, string> = {}) =>
  new Request('http://api.test/api/v1/loyalty/points/earn', { method: 'POST', body: '{"card_id":1}', headers });
const fast = { attempts: 4, baseDelayMs: 1, maxDelayMs: 20 };

describe('retryingFetch', () => {
  it('repeats a keyed POST after a network error and a 503, with the same key and body', async () => {
    const { fetch, seen } = scripted([new TypeError('fetch failed'), status(503), status(200)]);
    const res = await retryingFetch(fetch, fast)(post({ 'Idempotency-Key': 'k1' }));
    expect(res.status).toBe(200);
    expect(seen).toEqual(Array(3).fill({ method: 'POST', key: 'k1', body: '{"card_id":1}' }));
  });

  it('never repeats a POST without a key', async () => {
    const a = scripted([status(503), status(200)]);
    expect((await retryingFetch(a.fetch, fast)(post())).status).toBe(503);
    expect(a.seen).toHaveLength(1);
    const b = scripted([new TypeError('fetch failed'), status(200)]);
    await expect(retryingFetch(b.fetch, fast)(post())).rejects.toThrow('fetch failed');
    expect(b.seen).toHaveLength(1);
  });

  it('repeats a GET on 429 and a keyed POST on 409 idempotency_in_progress, not on other failures', async () => {
    const a = scripted([status(429, { 'Retry-After': '0' }), status(200)]);
    expect((await retryingFetch(a.fetch, fast)(new Request('http://api.test/x'))).status).toBe(200);
    expect(a.seen).toHaveLength(2);
    const b = scripted([status(409, {}, { success: false, error: { code: 'idempotency_in_progress' } }), status(200)]);
    expect((await retryingFetch(b.fetch, fast)(post({ 'Idempotency-Key': 'k' }))).status).toBe(200);
    const c = scripted([status(422), status(500), status(200)]);
    expect((await retryingFetch(c.fetch, fast)(new Request('http://api.test/x'))).status).toBe(422);
    expect(c.seen).toHaveLength(1);
  });

  it('gives up after the bounded attempts, and at once when Retry-After is longer than it would wait', async () => {
    const a = scripted([status(503), status(503), status(503), status(503), status(200)]);
    expect((await retryingFetch(a.fetch, fast)(new Request('http://api.test/x'))).status).toBe(503);
    expect(a.seen).toHaveLength(4);
    const b = scripted([status(429, { 'Retry-After': '60' }), status(200)]);
    expect((await retryingFetch(b.fetch, fast)(new Request('http://api.test/x'))).status).toBe(429);
    expect(b.seen).toHaveLength(1);
  });
});

describe('retry timing', () => {
  it('reads Retry-After as seconds or a date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs(status(429, { 'Retry-After': '3' }), now)).toBe(3000);
    expect(retryAfterMs(status(429, { 'Retry-After': 'Thu, 01 Jan 2026 00:00:05 GMT' }), now)).toBe(5000);
    expect(retryAfterMs(status(429), now)).toBeNull();
    expect(retryAfterMs(status(429, { 'Retry-After': 'soon' }), now)).toBeNull();
  });

  it('backs off exponentially with full jitter, capped', () => {
    expect([1, 2, 3, 4].map((n) => backoffMs(n, 100, 500, () => 0.999))).toEqual([99, 199, 399, 499]);
    expect(backoffMs(3, 100, 500, () => 0)).toBe(0);
  });
});
