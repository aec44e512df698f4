// What tracing costs: the points earn again on a second system started with tracing on (spans
// exported over OTLP/HTTP to a receiver here that reads and drops them), sampling a share of new
// traces (default 10 %), against the points earn of the run's own system, whose tracing is off.
// The two are run in turns (off, on, on, off, ...: `rounds` of each), so a machine whose load
// comes and goes weighs on both sides alike; the ratio is of their summed requests.
import os from 'node:os';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Api } from './api.ts';
import { runHttp, type Measured } from './load.ts';
import pg from 'pg';
import { sampleCpu, type CpuSample } from './cpu.ts';
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
  /** Each turn's rps, tracing off and on, in the order run. */
  rounds: { off_rps: number; on_rps: number }[];
  /** The machine's 1-minute load average before and after the turns. */
  load_average: [number, number];
  /**
   * CPU microseconds per request of the services' own processes (gateway, ledger, identity, ...;
   * not PostgreSQL or nats-server, whose counts include every process of that name on the
   * machine), over all turns, with tracing off and on: less moved by other load than rps.
   */
  services_cpu_us: { off: number | null; on: number | null };
  /** The same, process by process (gateway, ledger, ...): where tracing's CPU goes. */
  cpu_us_by_process: Record<string, { off: number | null; on: number | null }>;
  /** Spans the receiver took, and their OTLP/JSON bytes. */
  exports: { requests: number; bytes: number };
}

/** At most this long waited, before each turn, for both systems' event backlogs. */
const SETTLE_SECONDS = 60;

/** CPU seconds by process and side, as microseconds per request of that side. */
function perRequest(
  used: { off: Map<string, number>; on: Map<string, number> },
  offRequests: number,
  onRequests: number,
): Record<string, { off: number | null; on: number | null }> {
  const per = (seconds: number | undefined, requests: number) =>
    seconds === undefined || requests === 0 ? null : Math.round((seconds * 1e6) / requests);
  const names = [...new Set([...used.off.keys(), ...used.on.keys()])];
  return Object.fromEntries(
    names.map((n) => [n, { off: per(used.off.get(n), offRequests), on: per(used.on.get(n), onRequests) }]),
  );
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
  /** A points earn run of `seconds` on the run's own system (tracing off), for the turns. */
  plain?: (seconds: number) => Promise<Measured>;
  /** The run's own system's service processes (their CPU per request, tracing off). */
  plainPids?: () => Record<string, number>;
  /** Wait until the run's own system's event backlog is done (at most `maxSeconds`). */
  settlePlain?: (maxSeconds: number) => Promise<unknown>;
  rounds?: number;
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
    // Statistics for the freshly provisioned tables, as the run's own system gets them (run.ts):
    // with autovacuum off, a system left without them slowed down turn after turn as its tables
    // grew (seen: the traced side's last turn at 62-78 % of its others), which was counted as
    // tracing's cost.
    await system.settle(SETTLE_SECONDS);
    if (system.databaseUrl) {
      const db = new pg.Pool({ connectionString: system.databaseUrl, max: 1 });
      await db.query('ANALYZE').finally(() => db.end());
    }
    const headers = { 'x-app-id': fixture.app.appId, 'x-api-key': fixture.app.apiKey };
    if (opts.warmup > 0)
      await runHttp({
        url: system.url,
        connections: opts.connections,
        seconds: opts.warmup,
        headers,
        next: httpScenario('points_earn', fixture, 'warmup', api, opts.connections).next,
      });
    const traced = httpScenario('points_earn', fixture, 'full', api, opts.connections);
    // The services' CPU seconds (their own processes only) around each turn.
    const cpu = { off: 0, on: 0 };
    const byProcess = { off: new Map<string, number>(), on: new Map<string, number>() };
    const measured = async (side: 'off' | 'on', pids: Record<string, number>, run: () => Promise<Measured>) => {
      // A turn starts once both systems have done what the turn before left them (outbox, consumers,
      // mail): else a turn that follows the other system's pays for its backlog, and the order of
      // the turns (off, on, on, off, off, on) gives that to the traced side twice out of three.
      await Promise.all([opts.settlePlain?.(SETTLE_SECONDS), system.settle(SETTLE_SECONDS)]);
      const before: CpuSample | null = sampleCpu(pids);
      const m = await run();
      const after: CpuSample | null = sampleCpu(pids);
      if (!before || !after) cpu[side] = NaN;
      for (const k of Object.keys(pids)) {
        const used = (after?.[k] ?? 0) - (before?.[k] ?? 0);
        cpu[side] += used;
        byProcess[side].set(k, (byProcess[side].get(k) ?? 0) + used);
      }
      return m;
    };
    const on = (seconds: number) =>
      measured('on', system.pids(), () =>
        runHttp({ url: system.url, connections: opts.connections, seconds, headers, next: traced.next }),
      );
    const plain = opts.plain;
    const off = plain
      ? (seconds: number) => measured('off', opts.plainPids?.() ?? {}, () => plain(seconds))
      : undefined;
    const load = () => Math.round(os.loadavg()[0]! * 100) / 100;
    const loadBefore = load();
    const rounds: { off: Measured | null; on: Measured }[] = [];
    const turns = opts.plain ? Math.max(1, opts.rounds ?? 3) : 1;
    for (let k = 0; k < turns; k++) {
      // Off first in even turns, on first in odd ones.
      if (off && k % 2 === 0) {
        const offRun = await off(opts.duration);
        rounds.push({ off: offRun, on: await on(opts.duration) });
      } else {
        const onRun = await on(opts.duration);
        rounds.push({ off: off ? await off(opts.duration) : null, on: onRun });
      }
    }
    const onRequests = rounds.reduce((a, r) => a + r.on.requests, 0);
    const onSeconds = rounds.reduce((a, r) => a + r.on.seconds, 0);
    const rps = Math.round((onRequests / onSeconds) * 10) / 10;
    const offRuns = rounds.flatMap((r) => (r.off ? [r.off] : []));
    const plainRps =
      offRuns.length > 0
        ? Math.round((offRuns.reduce((a, r) => a + r.requests, 0) / offRuns.reduce((a, r) => a + r.seconds, 0)) * 10) /
          10
        : opts.plainRps;
    const ratio = plainRps > 0 ? Math.round((rps / plainRps) * 100) / 100 : 0;
    opts.log(
      `tracing: points_earn ${rps} rps with tracing on, ${plainRps} rps off (${ratio}x; turns ${rounds.map((r) => `${r.off?.rps ?? '-'}/${r.on.rps}`).join(', ')})`,
    );
    return {
      sampling: opts.sampling,
      rps,
      p99_ms: Math.max(...rounds.map((r) => r.on.p99_ms)),
      plain_rps: plainRps,
      ratio,
      rounds: rounds.map((r) => ({ off_rps: r.off?.rps ?? opts.plainRps, on_rps: r.on.rps })),
      load_average: [loadBefore, load()],
      services_cpu_us: {
        off:
          offRuns.length > 0 && opts.plainPids && Number.isFinite(cpu.off)
            ? Math.round((cpu.off * 1e6) / offRuns.reduce((a, r) => a + r.requests, 0))
            : null,
        on: Number.isFinite(cpu.on) && onRequests > 0 ? Math.round((cpu.on * 1e6) / onRequests) : null,
      },
      cpu_us_by_process: perRequest(
        byProcess,
        offRuns.reduce((a, r) => a + r.requests, 0),
        onRequests,
      ),
      exports: { ...otlp.counts },
    };
  } finally {
    await system.stop();
    await otlp.stop();
  }
}
