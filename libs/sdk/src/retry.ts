/** How failed attempts are repeated; see `retryingFetch`. */
export interface RetryOptions {
  /** Attempts in all, the first included (default 3; 1 turns retries off). */
  attempts?: number;
  /** Backoff before the second attempt; doubles each time (default 200 ms). */
  baseDelayMs?: number;
  /**
   * Longest wait between attempts (default 10 s). A Retry-After longer than this is not waited
   * for: the 429/503 is answered to the caller instead.
   */
  maxDelayMs?: number;
}

type Fetch = (request: Request) => Promise<Response>;

const RETRY_STATUSES = new Set([429, 503]);

/**
 * Only a request that may safely run twice is repeated: a GET, or a POST carrying an
 * Idempotency-Key (the gateway replays the first outcome for the same key, so a repeat never
 * earns or redeems twice). A POST without a key is never repeated: its first attempt may have
 * been applied even though its answer was lost.
 */
export function isRetrySafe(request: Request): boolean {
  return request.method === 'GET' || request.method === 'HEAD' || request.headers.has('idempotency-key');
}

/** Retry-After as milliseconds (delta-seconds or an HTTP date), or null when absent or unreadable. */
export function retryAfterMs(response: Response, now = Date.now()): number | null {
  const value = response.headers.get('retry-after');
  if (value === null || value.trim() === '') return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** Exponential backoff with full jitter: a random wait in [0, min(max, base * 2^(attempt-1))]. */
export function backoffMs(attempt: number, base: number, max: number, random = Math.random): number {
  return Math.floor(random() * Math.min(max, base * 2 ** (attempt - 1)));
}

function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A 409 idempotency_in_progress: the first request with this key is still running; asking again later is safe. */
async function inProgress(response: Response): Promise<boolean> {
  if (response.status !== 409) return false;
  try {
    const body: unknown = await response.clone().json();
    return (
      typeof body === 'object' &&
      body !== null &&
      'error' in body &&
      typeof body.error === 'object' &&
      body.error !== null &&
      'code' in body.error &&
      body.error.code === 'idempotency_in_progress'
    );
  } catch {
    return false;
  }
}

/**
 * Wraps `fetch` so that a retry-safe request (see isRetrySafe) is repeated after a network error,
 * a 429, a 503 or a 409 idempotency_in_progress, with exponential backoff and jitter, at most
 * `attempts` times. Retry-After is honoured (never retried sooner). Every attempt sends the same
 * request, hence the same Idempotency-Key.
 */
export function retryingFetch(fetchImpl: Fetch, options: RetryOptions = {}): Fetch {
  const attempts = Math.max(1, Math.floor(options.attempts ?? 3));
  const base = options.baseDelayMs ?? 200;
  const max = options.maxDelayMs ?? 10_000;
  return async (request) => {
    if (attempts === 1 || !isRetrySafe(request)) return fetchImpl(request);
    for (let attempt = 1; ; attempt += 1) {
      const last = attempt >= attempts;
      let response: Response;
      try {
        // A clone per attempt: a request body can be read once.
        response = await fetchImpl(last ? request : request.clone());
      } catch (error) {
        if (last || request.signal.aborted) throw error;
        await sleep(backoffMs(attempt, base, max), request.signal);
        continue;
      }
      if (last || !(RETRY_STATUSES.has(response.status) || (await inProgress(response)))) return response;
      const told = retryAfterMs(response);
      if (told !== null && told > max) return response;
      await response.body?.cancel();
      await sleep(Math.max(told ?? 0, backoffMs(attempt, base, max)), request.signal);
    }
  };
}
