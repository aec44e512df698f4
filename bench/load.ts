// Drivers: autocannon against the gateway (the full path) and a plain loop of async workers for
// the direct-SQL baseline. Both measure every operation's latency to the microsecond and count
// outcomes the same way, so the two sides of a scenario compare like with like.
import autocannon from 'autocannon';

export interface Measured {
  requests: number;
  seconds: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  /** Outcomes other than success and the scenario's expected refusals (connection errors, timeouts, other statuses). */
  errors: number;
  /** Expected refusals (the redemption scenario's 422 insufficient_balance). */
  expected_refusals: number;
  statuses: Record<string, number>;
}

export interface HttpRequestSpec {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  body?: string;
  headers?: Record<string, string>;
  /** Called with the answer; the redemption scenario counts successes per account. */
  onAnswer?: (status: number) => void;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

class Recorder {
  private latencies = new Float64Array(1 << 16);
  private n = 0;
  statuses: Record<string, number> = {};
  errors = 0;
  expected = 0;
  constructor(private readonly expectedStatuses: number[]) {}

  record(status: number | 'error', ms: number): void {
    const key = String(status);
    this.statuses[key] = (this.statuses[key] ?? 0) + 1;
    if (status === 'error' || (status >= 300 && !this.expectedStatuses.includes(status))) this.errors++;
    else if (status >= 300) this.expected++;
    if (this.n === this.latencies.length) {
      const bigger = new Float64Array(this.latencies.length * 2);
      bigger.set(this.latencies);
      this.latencies = bigger;
    }
    this.latencies[this.n++] = ms;
  }

  result(seconds: number): Measured {
    const sorted = this.latencies.slice(0, this.n).sort();
    const round = (v: number, d = 2) => Math.round(v * 10 ** d) / 10 ** d;
    return {
      requests: this.n,
      seconds: round(seconds),
      rps: round(this.n / seconds, 1),
      p50_ms: round(percentile(sorted, 50)),
      p99_ms: round(percentile(sorted, 99)),
      errors: this.errors,
      expected_refusals: this.expected,
      statuses: this.statuses,
    };
  }
}

/**
 * Drive the gateway: `connections` keep-alive connections, each sending the next request as soon as
 * the last answered (or, with `overallRate`, at that pace over all of them).
 */
export async function runHttp(opts: {
  url: string;
  connections: number;
  seconds: number;
  headers: Record<string, string>;
  next: () => HttpRequestSpec;
  expectedStatuses?: number[];
  /** Requests per second over all connections (a steady load), instead of as fast as answers come. */
  overallRate?: number;
}): Promise<Measured> {
  const rec = new Recorder(opts.expectedStatuses ?? []);
  const started = process.hrtime.bigint();
  const instance = autocannon({
    url: opts.url,
    connections: opts.connections,
    ...(opts.overallRate ? { overallRate: opts.overallRate } : {}),
    duration: opts.seconds,
    headers: opts.headers,
    timeout: 10,
    requests: [
      {
        setupRequest: (req, context) => {
          const spec = opts.next();
          (context as { onAnswer?: (s: number) => void }).onAnswer = spec.onAnswer;
          return {
            ...req,
            method: spec.method,
            path: spec.path,
            body: spec.body,
            headers: { ...opts.headers, ...spec.headers },
          };
        },
        onResponse: (status, _body, context) => (context as { onAnswer?: (s: number) => void }).onAnswer?.(status),
      },
    ],
  }) as unknown as autocannon.Instance & Promise<autocannon.Result>;
  // autocannon emits (client, statusCode, bytes, responseTimeMs) with sub-millisecond time.
  instance.on('response', ((...args: unknown[]) => rec.record(args[1] as number, args[3] as number)) as () => void);
  const result = await instance;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const measured = rec.result(Math.min(seconds, result.duration || seconds));
  // Connection errors and timeouts (autocannon counts a timeout in both) never produce a response event.
  const lost = result.errors;
  if (lost > 0) {
    measured.errors += lost;
    measured.statuses.error = (measured.statuses.error ?? 0) + lost;
  }
  return measured;
}

/** Outcome of one direct operation: a status the HTTP side would have answered. */
export type DirectOutcome = 200 | 422 | 404;

/** The baseline: `concurrency` workers in this process, each issuing the next operation as soon as the last finished. */
export async function runDirect(opts: {
  concurrency: number;
  seconds: number;
  op: (i: number) => Promise<DirectOutcome>;
  expectedStatuses?: number[];
}): Promise<Measured> {
  const rec = new Recorder(opts.expectedStatuses ?? []);
  const started = process.hrtime.bigint();
  const deadline = started + BigInt(Math.round(opts.seconds * 1e9));
  let i = 0;
  const worker = async () => {
    while (process.hrtime.bigint() < deadline) {
      const t = process.hrtime.bigint();
      let status: number | 'error';
      try {
        status = await opts.op(i++);
      } catch {
        status = 'error';
      }
      rec.record(status, Number(process.hrtime.bigint() - t) / 1e6);
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  return rec.result(Number(process.hrtime.bigint() - started) / 1e9);
}
