import type { KeyObject } from 'node:crypto';
import { Agent, request } from 'undici';
import { WEBHOOK_HEADERS } from '@loyalty/contracts';
import { signatureHeader } from './domain/signature.ts';
import type { TargetGuard } from './target-guard.ts';

/** How an attempt ended, for the log and the metrics. */
export type AttemptOutcome = 'delivered' | 'http_error' | 'timeout' | 'connection_error' | 'refused';

export interface AttemptResult {
  outcome: AttemptOutcome;
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
}

/** What of a response body is read (then the connection is dropped): receivers answer, they do not upload. */
export const RESPONSE_READ_LIMIT = 4096;

/**
 * POSTs deliveries. One undici Agent: a keep-alive connection pool per origin (an endpoint that
 * gets a burst reuses its connections instead of a TCP and TLS handshake per delivery), no
 * redirects followed (a 3xx is a failed attempt), every new connection resolved through the
 * target guard (the SSRF rule, checked on the address actually connected to). Concurrency is the
 * dispatcher's business: the pools do not limit connections themselves.
 */
export class Sender {
  private readonly agent: Agent;

  constructor(
    private readonly guard: TargetGuard,
    private readonly timeoutMs: number,
    private readonly userAgent = 'loyalty-webhooks/1.0',
  ) {
    this.agent = new Agent({
      connect: { timeout: timeoutMs, ...(guard.lookup ? { lookup: guard.lookup } : {}) },
      keepAliveTimeout: 10_000,
      keepAliveMaxTimeout: 60_000,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
  }

  /** One attempt: sign now, POST, a 2xx within the timeout is delivered. Never throws. */
  async send(
    url: string,
    secrets: readonly KeyObject[],
    event: { id: string; type: string; body: string },
    now: Date,
  ): Promise<AttemptResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { outcome: 'refused', httpStatus: null, error: 'the URL is not valid', durationMs: 0 };
    }
    const literal = this.guard.literalRefusal(parsed);
    if (literal) return { outcome: 'refused', httpStatus: null, error: literal, durationMs: 0 };
    try {
      // The connection, the answer's headers and its body each time out on their own (the agent's
      // timeouts: no timer and AbortSignal per attempt); an answer later than the timeout as a whole
      // is a timeout too, whatever its status.
      const res = await request(parsed, {
        method: 'POST',
        dispatcher: this.agent,
        headers: {
          'content-type': 'application/json',
          'user-agent': this.userAgent,
          [WEBHOOK_HEADERS.signature]: signatureHeader(secrets, Math.floor(now.getTime() / 1000), event.body),
          [WEBHOOK_HEADERS.eventId]: event.id,
          [WEBHOOK_HEADERS.eventType]: event.type,
        },
        body: event.body,
      });
      const durationMs = elapsed();
      // Read a little (a small answer keeps the connection reusable), never the whole of a big one.
      await res.body.dump({ limit: RESPONSE_READ_LIMIT }).catch(() => undefined);
      if (durationMs > this.timeoutMs)
        return {
          outcome: 'timeout',
          httpStatus: res.statusCode,
          error: `no answer within ${this.timeoutMs} ms`,
          durationMs,
        };
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      return {
        outcome: ok ? 'delivered' : 'http_error',
        httpStatus: res.statusCode,
        error: ok ? null : `HTTP ${res.statusCode}`,
        durationMs,
      };
    } catch (err) {
      return { ...failureOf(err, this.timeoutMs), durationMs: elapsed() };
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

function failureOf(err: unknown, timeoutMs: number): Omit<AttemptResult, 'durationMs'> {
  const e = err as Error & { code?: string; cause?: Error & { code?: string } };
  const code = e.code ?? e.cause?.code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT')
    return { outcome: 'timeout', httpStatus: null, error: `no answer within ${timeoutMs} ms` };
  const refused = [e, e.cause].find((x) => x?.code === 'ERR_WEBHOOK_TARGET_REFUSED');
  if (refused) return { outcome: 'refused', httpStatus: null, error: refused.message };
  const message = (e.cause?.message ?? e.message ?? 'request failed').slice(0, 300);
  return { outcome: 'connection_error', httpStatus: null, error: code ? `${code}: ${message}` : message };
}
