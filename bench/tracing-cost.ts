// What tracing costs: the points earn again on a second system started with tracing on (spans
// exported over OTLP/HTTP to a receiver here that reads and drops them), sampling a share of new
// traces (default 10 %), against the points earn of the run's own system, whose tracing is off.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Api } from './api.ts';
import { runHttp } from './load.ts';
import { provision } from './provision.ts';
import { httpScenario } from './scenarios.ts';
import { startBenchSystem, type BenchNats } from './system.ts';

export interface TracingReport {
  sampling: number;
  rps: number;
  p99_ms: number;
  /** The points earn of the run's system (tracing off). */
  plain_rps: number;
  ratio: number;
  /** Spans the receiver took, and their OTLP/JSON bytes. */
  exports: { requests: number; bytes: number };
}

/** An OTLP/HTTP receiver that reads every export and drops it (the collector's cost is not ours). */
async function discardingOtlpReceiver() {
  const counts = { requests: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (counts.bytes += c.length));
    req.on('end', () => {
      counts.requests++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export async function measureTracingCost(opts: {
  plainRps: number;
  sampling: number;
  database: string;
  subjectRoot: string;
  nats: BenchNats;
  members: number;
  connections: number;
  duration: number;
  warmup: number;
  log: (line: string) => void;
}): Promise<TracingReport> {
  const otlp = await discardingOtlpReceiver();
  // The run's NATS stays up for the run's own system: this one only borrows it.
  const nats: BenchNats = { ...opts.nats, stop: async () => undefined };
  opts.log(`tracing: a second system with tracing on (${opts.sampling * 100} % of new traces sampled)`);
  const system = await startBenchSystem({
    keep: false,
    build: false,
    database: `${opts.database}_traced`,
    subjectRoot: `${opts.subjectRoot}_traced`,
    profile: false,
    log: opts.log,
    nats,
    tracing: { endpoint: otlp.url, sampling: opts.sampling },
  });
  try {
    const api = new Api(system.url, system.operatorToken);
    const fixture = await provision(api, {
      members: opts.members,
      historyRows: 1,
      redeemAccounts: 1,
      redeemStartCents: 100,
      concurrency: Math.min(opts.connections, 16),
      log: opts.log,
    });
    const headers = { 'x-app-id': fixture.app.appId, 'x-api-key': fixture.app.apiKey };
    if (opts.warmup > 0)
      await runHttp({
        url: system.url,
        connections: opts.connections,
        seconds: opts.warmup,
        headers,
        next: httpScenario('points_earn', fixture, 'warmup', api, opts.connections).next,
      });
    const run = await runHttp({
      url: system.url,
      connections: opts.connections,
      seconds: opts.duration,
      headers,
      next: httpScenario('points_earn', fixture, 'full', api, opts.connections).next,
    });
    const ratio = opts.plainRps > 0 ? Math.round((run.rps / opts.plainRps) * 100) / 100 : 0;
    opts.log(`tracing: points_earn ${run.rps} rps with tracing on, ${opts.plainRps} rps off (${ratio}x)`);
    return {
      sampling: opts.sampling,
      rps: run.rps,
      p99_ms: run.p99_ms,
      plain_rps: opts.plainRps,
      ratio,
      exports: { ...otlp.counts },
    };
  } finally {
    await system.stop();
    await otlp.stop();
  }
}
