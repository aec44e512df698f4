import type { KeyObject } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { WEBHOOK_HEADERS } from '@loyalty/contracts';
import { signatureHeader } from './domain/signature.ts';
import { errorParts } from './error-parts.ts';
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
 * POSTs deliveries with Node's own HTTP client: one keep-alive agent per scheme (an endpoint that
 * gets a burst reuses its connections instead of a TCP and TLS handshake per delivery), no
 * redirects followed (a 3xx is a failed attempt), every new connection resolved through the
 * target guard (the SSRF rule, checked on the address actually connected to). Concurrency is the
 * dispatcher's business: the agents do not limit connections themselves.
 *
 * Not undici: its HTTP parser is WebAssembly, whose compiled code and memory cost the service
 * ~40 MB of resident memory at the same delivery rate (bench/README.md); Node's parser
 * is native and already loaded.
 */
export class Sender {
  private readonly agents: Record<'http:' | 'https:', http.Agent>;

  constructor(
    private readonly guard: TargetGuard,
    private readonly timeoutMs: number,
    private readonly userAgent = 'loyalty-webhooks/1.0',
  ) {
    // Idle connections are closed after 10 s (the socket timeout of a pooled socket).
    const options = { keepAlive: true, timeout: 10_000, scheduling: 'lifo' as const };
    this.agents = { 'http:': new http.Agent(options), 'https:': new https.Agent(options) };
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
    const agent =
      parsed.protocol === 'http:' || parsed.protocol === 'https:' ? this.agents[parsed.protocol] : undefined;
    if (!agent) return { outcome: 'refused', httpStatus: null, error: 'the URL is not http(s)', durationMs: 0 };
    try {
      const status = await this.post(
        parsed,
        agent,
        {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(event.body)),
          'user-agent': this.userAgent,
          [WEBHOOK_HEADERS.signature]: signatureHeader(secrets, Math.floor(now.getTime() / 1000), event.body),
          [WEBHOOK_HEADERS.eventId]: event.id,
          [WEBHOOK_HEADERS.eventType]: event.type,
        },
        event.body,
      );
      const ok = status >= 200 && status < 300;
      return {
        outcome: ok ? 'delivered' : 'http_error',
        httpStatus: status,
        error: ok ? null : `HTTP ${status}`,
        durationMs: elapsed(),
      };
    } catch (err) {
      return { ...failureOf(err, this.timeoutMs), durationMs: elapsed() };
    }
  }

  /**
   * The POST and its answer's status, within the timeout as a whole (connection, headers, the part
   * of the body that is read). A small answer is read to its end, so the connection is reused; of a
   * big one at most RESPONSE_READ_LIMIT bytes, then the connection is dropped.
   */
  private post(url: URL, agent: http.Agent, headers: Record<string, string>, body: string): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const send = url.protocol === 'https:' ? https.request : http.request;
      const req = send(url, {
        method: 'POST',
        agent,
        headers,
        ...(this.guard.lookup ? { lookup: this.guard.lookup } : {}),
      });
      const timer = setTimeout(() => req.destroy(new AttemptTimeout()), this.timeoutMs);
      const done = (settle: () => void) => {
        clearTimeout(timer);
        settle();
      };
      req.on('error', (err) => done(() => reject(err)));
      req.once('response', (res) => {
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > RESPONSE_READ_LIMIT) {
            res.destroy();
            done(() => resolve(res.statusCode ?? 0));
          }
        });
        res.once('end', () => done(() => resolve(res.statusCode ?? 0)));
        res.on('error', (err) => done(() => reject(err)));
      });
      req.end(body);
    });
  }

  close(): Promise<void> {
    for (const agent of Object.values(this.agents)) agent.destroy();
    return Promise.resolve();
  }
}

/** The attempt's time ran out. */
class AttemptTimeout extends Error {
  readonly code = 'ERR_WEBHOOK_ATTEMPT_TIMEOUT';
}

function failureOf(err: unknown, timeoutMs: number): Omit<AttemptResult, 'durationMs'> {
  const e = errorParts(err);
  const cause = errorParts(e.cause);
  const code = e.code ?? cause.code;
  if (code === 'ERR_WEBHOOK_ATTEMPT_TIMEOUT')
    return { outcome: 'timeout', httpStatus: null, error: `no answer within ${timeoutMs} ms` };
  const refused = [e, cause].find((x) => x.code === 'ERR_WEBHOOK_TARGET_REFUSED');
  if (refused) return { outcome: 'refused', httpStatus: null, error: refused.message ?? 'the target was refused' };
  const message = (cause.message ?? e.message ?? 'request failed').slice(0, 300);
  return { outcome: 'connection_error', httpStatus: null, error: code ? `${code}: ${message}` : message };
}
