// The system under test: either started here in its production form (compiled services as
// separate processes, test/support/cluster.ts) against the machine's PostgreSQL, NATS and Redis in
// a dedicated database and subject root, or a running one reached by --url.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { NatsConnection } from 'nats';
import { spawn, spawnSync } from 'node:child_process';
import { Subjects } from '@loyalty/contracts';
import { Cluster, repoRoot } from '../test/support/cluster.ts';
import { connectAs } from '../test/support/nats.ts';
import { ensureAuthenticatedNats, has, stopProcess } from '../scripts/bootstrap.mjs';

/** A start-up problem of the benchmark: its message says what to do (printed without a stack trace). */
export class BenchSetupError extends Error {}

/** The NATS server a started bench system uses, and how to stop it when the bench started it. */
export interface BenchNats {
  url: string;
  /** Stops the nats-server the bench started (nothing when it was already running). */
  stop(): Promise<void>;
}

/**
 * The NATS of a started bench system, checked before anything else runs: NATS_URL or
 * LOYALTY_NATS_URL when set, otherwise this checkout's own authenticated nats-server (as `npm
 * start` and `npm test` use it), started here when it is not running and stopped again at the end.
 * A server that does not answer, or refuses the harness's user, is a BenchSetupError saying so.
 */
export async function benchNats(log: (line: string) => void): Promise<BenchNats> {
  const configured = process.env.NATS_URL || process.env.LOYALTY_NATS_URL;
  let url = configured;
  let started: { pid: number } | undefined;
  if (!url) {
    if (!has('nats-server'))
      throw new BenchSetupError(
        "`nats-server` is not installed, and NATS_URL is not set: install nats-server (the bench runs this checkout's own, authenticated), or set NATS_URL to an authenticated NATS with var/nats/nats-server.conf's users",
      );
    const own = await ensureAuthenticatedNats();
    url = own.url;
    started = own.process;
    if (started) log(`started this checkout's nats-server on ${url} (pid ${started.pid}); it stops with the bench`);
  }
  const stop = async () => {
    if (started) await stopProcess(started.pid);
  };
  try {
    const nc = await connectAs('admin', { url, timeout: 5000, reconnect: false });
    await nc.close();
  } catch (err) {
    await stop();
    const code = (err as { code?: string }).code;
    const why = err instanceof Error ? err.message : String(err);
    throw new BenchSetupError(
      code === 'AUTHORIZATION_VIOLATION'
        ? `NATS at ${url} refused the bench's admin user: it must run with this checkout's users (var/nats/nats-server.conf, passwords in var/secrets.json)`
        : `NATS does not answer at ${url} (${code ?? why}). ${configured ? 'Start it, or unset NATS_URL/LOYALTY_NATS_URL to use' : 'Start'} this checkout's own nats-server (\`npm start\` starts it; \`npm run bench\` starts it when nothing is configured).`,
    );
  }
  return { url, stop };
}

export interface BenchSystem {
  url: string;
  operatorToken: string;
  /** The system's database (null when --url was given without --database-url). */
  databaseUrl: string | null;
  /** Peak resident memory (VmHWM) of every service process, in MB. */
  memoryMb(): Record<string, number>;
  /** Process ids per service (first replica), for profiling. */
  pids(): Record<string, number>;
  describe: string;
  /**
   * Wait until the events of earlier work are handled (outbox published, every JetStream consumer
   * caught up), so background work of one phase does not run during the next one's measurement.
   * Returns the seconds waited; null when it cannot tell (a running system reached by --url).
   */
  settle(maxSeconds: number): Promise<number | null>;
  /** Notification mails still waiting in identity's consumer (null: unknown). */
  mailBacklog(): Promise<number | null>;
  /**
   * The started system's NATS and subject root, and a way to stop and start its webhooks replica
   * (the webhooks scenario builds a backlog while it is down, then times how fast it drains); null
   * for --url.
   */
  stream: {
    natsUrl: string;
    root: string;
    pauseWebhooks: () => Promise<void>;
    resumeWebhooks: () => Promise<void>;
  } | null;
  stop(): Promise<void>;
}

const PG_ADMIN_URL =
  process.env.BENCH_POSTGRES_URL || process.env.LOYALTY_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const SERVICES = ['identity', 'ledger', 'claims', 'referrals', 'webhooks'] as const;

/**
 * An SMTP server that accepts and drops every message (the bench measures the platform, not a mail
 * server), in a child process so that it does not share the load generator's event loop.
 */
async function startDiscardingMailSink(): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [path.join(repoRoot, 'bench', 'discard-sink.mjs')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
    child.once('exit', (code) => reject(new Error(`the mail sink exited (${code})`)));
  });
  return {
    url: `smtp://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

async function recreateDatabase(name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  return PG_ADMIN_URL.replace(/\/[^/]*$/, `/${name}`);
}

async function dropDatabase(name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

/** Start identity, ledger, claims, referrals and one gateway as compiled processes. */
export const PROFILE_DIR = path.join(repoRoot, 'var', 'bench-profiles');

export async function startBenchSystem(opts: {
  keep: boolean;
  build: boolean;
  database: string;
  subjectRoot: string;
  profile: boolean;
  log: (line: string) => void;
  /** From benchNats, called before anything else. */
  nats: BenchNats;
  /** Tracing on: spans exported over OTLP/HTTP to `endpoint`, that share of new traces sampled. */
  tracing?: { endpoint: string; sampling: number };
}): Promise<BenchSystem> {
  if (opts.build) opts.log('building the services (node scripts/build.mjs)');
  Cluster.build(opts.build);
  const databaseUrl = await recreateDatabase(opts.database);
  // Migrated first by the migration program, then started without migrating, as the Kubernetes
  // deployment runs them (its migration Job, MIGRATE_ON_START=false): a service that migrates at
  // start keeps the migration library loaded for good, which its resident memory would count.
  migrateDatabase(databaseUrl);
  const mail = await startDiscardingMailSink();
  const root = opts.subjectRoot;
  const operatorToken = randomBytes(24).toString('hex');
  const natsUrl = opts.nats.url;
  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    MIGRATE_ON_START: 'false',
    NATS_URL: natsUrl,
    REDIS_URL: process.env.LOYALTY_REDIS_URL || 'redis://127.0.0.1:6379',
    SUBJECT_ROOT: root,
    REDIS_KEY_PREFIX: `${root}:`,
    SMTP_URL: mail.url,
    // The bench's tenants are sandboxes: their code mails are part of the measured cost.
    SANDBOX_SMTP_URL: mail.url,
    OTP_SECRET: randomBytes(24).toString('hex'),
    SECRETS_KEY: randomBytes(32).toString('base64'),
    AUDIT_KEY: randomBytes(32).toString('hex'),
    OPERATOR_TOKEN: operatorToken,
    // Production log level: every request's log lines are part of the cost being measured.
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    // The production form (as in the image): no development-only checks on the hot paths.
    NODE_ENV: 'production',
    // The per-app rate limit would turn the load into 429s; the bench measures throughput.
    RATE_LIMIT_MAX: '1000000000',
    // The lot sweep every second instead of every minute, so the expiry figure (bench/expiry.ts)
    // starts at once; a pass that finds nothing due is three index lookups.
    LOT_SWEEP_INTERVAL_MS: '1000',
    // The webhooks scenario's receiver listens on 127.0.0.1.
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  };
  if (opts.tracing) {
    env.OTEL_EXPORTER_OTLP_ENDPOINT = opts.tracing.endpoint;
    env.OTEL_TRACES_SAMPLER_ARG = String(opts.tracing.sampling);
  }
  if (opts.profile) {
    rmSync(PROFILE_DIR, { recursive: true, force: true });
    mkdirSync(PROFILE_DIR, { recursive: true });
    // Written when each service exits after SIGTERM (graceful shutdown ends in a normal exit).
    env.NODE_OPTIONS =
      `${process.env.NODE_OPTIONS ?? ''} --import=${path.join(repoRoot, 'bench', 'cpu-profiler.mjs')}`.trim();
    env.BENCH_PROFILE_DIR = PROFILE_DIR;
  }
  // A stale stream of an earlier, interrupted run would replay its events into this one.
  await deleteEventStream(root, natsUrl);
  const cluster = new Cluster(env, path.join(repoRoot, 'var', 'bench-logs', root));
  try {
    for (const s of SERVICES) {
      opts.log(`starting ${s}`);
      await cluster.add(s);
    }
    opts.log('starting the gateway');
    await cluster.add('gateway');
  } catch (err) {
    await cluster.stop().catch(() => undefined);
    await mail.stop();
    await opts.nats.stop();
    throw err;
  }
  const gateway = cluster.of('gateway')[0]!;
  return {
    url: gateway.url,
    operatorToken,
    databaseUrl,
    describe: `started here: compiled services (${[...SERVICES, 'gateway'].join(', ')}), database ${opts.database}, subject root ${root}, logs var/bench-logs/${root}/`,
    memoryMb: () => cluster.peakMemoryMb(),
    settle: (maxSeconds) => waitForEventBacklog(natsUrl, root, databaseUrl, maxSeconds),
    mailBacklog: () => withBacklog(natsUrl, databaseUrl, async (nc, db) => (await eventBacklog(nc, root, db)).mail),
    stream: {
      natsUrl,
      root,
      pauseWebhooks: async () => void (await cluster.of('webhooks')[0]!.signal('SIGTERM')),
      resumeWebhooks: () => cluster.of('webhooks')[0]!.start(),
    },
    pids: () => Object.fromEntries(cluster.replicas.map((r) => [r.service, r.pid ?? 0])),
    async stop() {
      await cluster.stop();
      await mail.stop();
      await deleteEventStream(root, natsUrl);
      if (!opts.keep) await dropDatabase(opts.database);
      await opts.nats.stop();
    },
  };
}

/** Every service's migrations, applied by the compiled migration program (scripts/dist/migrate.js). */
function migrateDatabase(databaseUrl: string): void {
  const r = spawnSync(process.execPath, [path.join(repoRoot, 'scripts', 'dist', 'migrate.js')], {
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new BenchSetupError(`migrating the bench database failed: ${r.stderr || r.stdout}`);
}

/**
 * Events not yet handled: unpublished outbox rows of every service and undelivered or unacknowledged
 * events of every JetStream consumer, with identity's notification mails counted apart (throttled,
 * reported on their own at the end): points-earned mails are the members' digests waiting to be
 * mailed, at most one per member who earned.
 */
async function eventBacklog(nc: NatsConnection, root: string, db: pg.Client): Promise<{ work: number; mail: number }> {
  const jsm = await nc.jetstreamManager();
  const backlog = { work: 0, mail: 0 };
  for await (const c of jsm.consumers.list(new Subjects(root).streamName())) {
    // The points-earned consumer only adds earns to members' digests (work); the mails are the digests.
    const mail = c.name.includes('-mail-') && !c.name.endsWith('points_earned');
    backlog[mail ? 'mail' : 'work'] += c.num_pending + c.num_ack_pending;
  }
  const { rows: digests } = await db
    .query<{ n: string }>(`SELECT count(*) AS n FROM identity.earn_mail_digests`)
    .catch(() => ({ rows: [{ n: '0' }] }));
  backlog.mail += Number(digests[0]!.n);
  const { rows: schemas } = await db.query<{ s: string }>(
    `SELECT table_schema AS s FROM information_schema.tables WHERE table_name = 'outbox'`,
  );
  for (const { s } of schemas) {
    const { rows } = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${s}".outbox WHERE published_at IS NULL`,
    );
    backlog.work += Number(rows[0]!.n);
  }
  // Webhook deliveries still to send (the webhooks scenario's, or a retry).
  if (schemas.some(({ s }) => s === 'webhooks')) {
    const { rows } = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM webhooks.deliveries WHERE status = 'pending'`,
    );
    backlog.work += Number(rows[0]!.n);
  }
  return backlog;
}

async function withBacklog<T>(
  natsUrl: string,
  databaseUrl: string,
  fn: (nc: NatsConnection, db: pg.Client) => Promise<T>,
): Promise<T> {
  const nc = await connectAs('admin', { url: natsUrl });
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    return await fn(nc, db);
  } finally {
    await db.end();
    await nc.close();
  }
}

async function waitForEventBacklog(
  natsUrl: string,
  root: string,
  databaseUrl: string,
  maxSeconds: number,
): Promise<number> {
  const started = Date.now();
  await withBacklog(natsUrl, databaseUrl, async (nc, db) => {
    // Not the notification mails: identity sends them at MAIL_NOTIFICATIONS_PER_SECOND (10 per
    // second by default), so the mails of a phase's earns take minutes; they go on, cheaply, during
    // later phases and their backlog is reported at the end.
    while ((await eventBacklog(nc, root, db)).work > 0 && Date.now() - started < maxSeconds * 1000)
      await new Promise((r) => setTimeout(r, 250));
  });
  return Math.round((Date.now() - started) / 100) / 10;
}

async function deleteEventStream(root: string, natsUrl: string): Promise<void> {
  const nc = await connectAs('admin', { url: natsUrl });
  try {
    const jsm = await nc.jetstreamManager();
    await jsm.streams.delete(new Subjects(root).streamName()).catch(() => undefined);
  } finally {
    await nc.close();
  }
}

/** Processes of running systems on this machine: `node .../services/<name>/dist/main.js`, with the env they run with. */
function findServiceProcesses(): { service: string; pid: number; env: Record<string, string> }[] {
  const found: { service: string; pid: number; env: Record<string, string> }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const main = cmd.map((a) => /services\/([a-z]+)\/dist\/main\.js$/.exec(a)?.[1]).find(Boolean);
      if (!main) continue;
      const env = Object.fromEntries(
        readFileSync(`/proc/${entry}/environ`, 'utf8')
          .split('\0')
          .filter((kv) => kv.includes('='))
          .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
      );
      found.push({ service: main, pid: Number(entry), env });
    } catch {
      // gone or not readable
    }
  }
  return found;
}

/**
 * The processes of the system behind `url`: the gateway listening on its port (PORT in its
 * environment) names the subject root, and the services of that root are its services. Empty
 * when the system does not run on this machine.
 */
function systemProcesses(url: string): { service: string; pid: number }[] {
  const port = new URL(url).port || '80';
  const all = findServiceProcesses();
  const gateway = all.find((p) => p.service === 'gateway' && (p.env.PORT ?? '3000') === port);
  if (!gateway) return [];
  const root = gateway.env.SUBJECT_ROOT ?? 'loyalty';
  return all.filter((p) => (p.env.SUBJECT_ROOT ?? 'loyalty') === root);
}

function vmHwmMb(pid: number): number {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round((Number(kb) / 1024) * 10) / 10 : 0;
  } catch {
    return 0;
  }
}

/** A running system (`npm start` or any deployment) reached over HTTP. */
export function runningSystem(url: string, databaseUrl: string | undefined): BenchSystem {
  let operatorToken = process.env.OPERATOR_TOKEN;
  const secrets = path.join(repoRoot, 'var', 'secrets.json');
  if (!operatorToken && existsSync(secrets))
    operatorToken = (JSON.parse(readFileSync(secrets, 'utf8')) as { operator_token?: string }).operator_token;
  if (!operatorToken)
    throw new Error('--url needs the operator token: set OPERATOR_TOKEN or run `npm start` once (var/secrets.json)');
  // Memory: the peak (VmHWM) of this system's service processes, when it runs on this machine.
  const peak: Record<string, number> = {};
  return {
    url,
    operatorToken,
    databaseUrl: databaseUrl ?? null,
    describe: `running system at ${url}${databaseUrl ? ' (database given)' : ''}`,
    memoryMb() {
      for (const p of systemProcesses(url)) peak[p.service] = Math.max(peak[p.service] ?? 0, vmHwmMb(p.pid));
      return { ...peak };
    },
    pids: () => Object.fromEntries(systemProcesses(url).map((p) => [p.service, p.pid])),
    settle: async () => null,
    mailBacklog: async () => null,
    stream: null,
    async stop() {},
  };
}
