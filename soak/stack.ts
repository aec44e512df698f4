import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { ensureSecrets } from '../scripts/bootstrap.mjs';
import { Cluster, Replica, repoRoot, type ClusterService } from '../test/support/cluster.ts';
import { MailSink } from '../test/support/mail-sink.ts';
import { PrivateNats, PrivatePostgres, PrivateRedis } from '../test/support/private-servers.ts';
import { WebhookReceiver } from '../test/support/webhook-receiver.ts';
import { startProxyProcess, type ProxyHandle } from './proxy.ts';

/**
 * The soak's own system on loopback: private PostgreSQL, NATS and Redis (their own ports and data
 * directories, so the machine's servers are never touched), TCP proxies in front of PostgreSQL and
 * NATS for the services, an SMTP sink and a webhook receiver, and two replicas of every service
 * and two gateways as compiled processes.
 */
export const SERVICES = ['identity', 'ledger', 'claims', 'referrals', 'webhooks'] as const;

export interface SoakStack {
  postgres: PrivatePostgres;
  nats: PrivateNats;
  redis: PrivateRedis;
  pgProxy: ProxyHandle;
  natsProxy: ProxyHandle;
  mail: MailSink;
  receiver: WebhookReceiver;
  cluster: Cluster;
  /** The soak database, reached directly (not through the proxy): the checks' view. */
  databaseUrl: string;
  natsUrl: string;
  root: string;
  operatorToken: string;
  gateways: string[];
  replicas: Replica[];
  logDir: string;
  stop(): Promise<void>;
}

/** Every outbox insert copied to public.soak_outbox_seen (committed events only): what the services recorded. */
async function recordOutboxes(databaseUrl: string): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await db.query(`
      CREATE TABLE IF NOT EXISTS public.soak_outbox_seen (
        schema text NOT NULL, id uuid NOT NULL, subject text NOT NULL, payload jsonb NOT NULL,
        recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(), PRIMARY KEY (schema, id));
      CREATE OR REPLACE FUNCTION public.soak_outbox_seen() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO public.soak_outbox_seen (schema, id, subject, payload)
        VALUES (TG_TABLE_SCHEMA, NEW.id, NEW.subject, NEW.payload) ON CONFLICT DO NOTHING;
        RETURN NEW;
      END $$;`);
    const { rows } = await db.query<{ s: string }>(
      `SELECT table_schema AS s FROM information_schema.tables WHERE table_name = 'outbox'`,
    );
    for (const { s } of rows)
      await db.query(
        `DROP TRIGGER IF EXISTS soak_outbox_seen ON "${s}".outbox;
         CREATE TRIGGER soak_outbox_seen AFTER INSERT ON "${s}".outbox FOR EACH ROW EXECUTE FUNCTION public.soak_outbox_seen()`,
      );
  } finally {
    await db.end();
  }
}

/**
 * Start (again) a replica, waiting up to `timeoutMs` for it to be ready: on a loaded machine a
 * start can take longer than the cluster's 30 s, and the process is still coming up then.
 */
export async function startPatiently(r: Replica, timeoutMs = 180_000): Promise<void> {
  const exited = () => r.exitCode !== null || r.exitSignal !== null;
  for (let attempt = 1; ; attempt++) {
    try {
      await r.start();
      return;
    } catch (err) {
      if (!exited()) {
        try {
          await r.waitReady(timeoutMs);
          return;
        } catch (late) {
          if (!exited()) throw late;
        }
      }
      // Exited during start (e.g. a start-up step timed out on a busy machine): once more.
      if (attempt >= 5) throw err;
    }
  }
}

/** One more replica of `service` in the cluster, started patiently. */
async function addReplica(cluster: Cluster, service: ClusterService, env: Record<string, string>): Promise<void> {
  const r = new Replica(service, `${service}-${cluster.of(service).length + 1}`, env, cluster.logDir);
  cluster.replicas.push(r);
  await startPatiently(r);
}

function buildIfNeeded(log: (line: string) => void): void {
  // A soak run from a clean clone builds dist/; the test suite's set-up has built it already.
  if (process.env.SOAK_SKIP_BUILD === '1') return;
  log('building the services (node scripts/build.mjs)');
  Cluster.build(true);
}

export async function startStack(opts: {
  log: (line: string) => void;
  replicas: number;
  gateways: number;
}): Promise<SoakStack> {
  const { log } = opts;
  ensureSecrets();
  buildIfNeeded(log);
  const postgres = new PrivatePostgres();
  const nats = new PrivateNats();
  const redis = new PrivateRedis();
  const cleanups: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  };
  // The private NATS uses this checkout's users (var/secrets.json); localNats() wants a URL to be known.
  const previousNatsUrl = process.env.LOYALTY_NATS_URL;
  process.env.LOYALTY_NATS_URL ??= 'nats://127.0.0.1:4222';
  // Interrupted while starting (Ctrl-C, a timeout): what has started so far is stopped. Once the
  // stack is up, the caller's own handler takes over.
  const interrupted = () => void stop().finally(() => process.exit(130));
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    log('starting private PostgreSQL, NATS and Redis');
    cleanups.push(
      () => postgres.destroy(),
      () => nats.destroy(),
      () => redis.destroy(),
    );
    await Promise.all([postgres.start(), nats.start(), redis.start()]);
    const admin = new pg.Client({ connectionString: postgres.adminUrl });
    await admin.connect();
    await admin.query('CREATE DATABASE soak');
    await admin.end();
    const databaseUrl = postgres.adminUrl.replace(/\/[^/]*$/, '/soak');
    const proxyProcess = await startProxyProcess({ postgres: postgres.port, nats: nats.port });
    cleanups.push(() => proxyProcess.stop());
    const { postgres: pgProxy, nats: natsProxy } = proxyProcess.proxies as Record<string, ProxyHandle>;
    if (!pgProxy || !natsProxy) throw new Error('the proxy process did not start both proxies');
    const mail = new MailSink();
    const smtpUrl = await mail.start();
    cleanups.push(() => mail.stop());
    const receiver = await new WebhookReceiver().start();
    cleanups.push(() => receiver.stop());
    const root = `soak${randomBytes(3).toString('hex')}`;
    const operatorToken = randomBytes(24).toString('hex');
    const viaProxy = postgres.adminUrl.replace(`:${postgres.port}/postgres`, `:${pgProxy.port}/soak`);
    const env: Record<string, string> = {
      DATABASE_URL: viaProxy,
      DATABASE_POOL_SIZE: '4',
      NATS_URL: `nats://127.0.0.1:${natsProxy.port}`,
      REDIS_URL: redis.url,
      SUBJECT_ROOT: root,
      REDIS_KEY_PREFIX: `${root}:`,
      SMTP_URL: smtpUrl,
      SANDBOX_SMTP_URL: smtpUrl,
      OTP_SECRET: randomBytes(24).toString('hex'),
      SECRETS_KEY: randomBytes(32).toString('base64'),
      AUDIT_KEY: randomBytes(32).toString('hex'),
      OPERATOR_TOKEN: operatorToken,
      NODE_ENV: 'production',
      LOG_LEVEL: process.env.SOAK_LOG_LEVEL ?? 'warn',
      REQUEST_TIMEOUT_MS: '4000',
      SHUTDOWN_TIMEOUT_MS: '5000',
      RATE_LIMIT_MAX: '1000000000',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_TIMEOUT_MS: '2000',
      // Points-earned digests after 5 s instead of a minute, so the end of a run can count them.
      EARN_MAIL_WINDOW_SECONDS: '5',
      EARN_MAIL_INTERVAL_MS: '500',
      MAIL_NOTIFICATIONS_PER_SECOND: '1000',
      CLAIM_SWEEP_INTERVAL_MS: '5000',
    };
    // Identity answers every request's authentication (the gateway asks it for each API key and
    // member token): with four connections a replica saturates under a latency fault and the
    // retries keep it saturated after the fault has ended.
    const envOf = (s: ClusterService): Record<string, string> =>
      s === 'identity' ? { ...env, DATABASE_POOL_SIZE: '12' } : env;
    const logDir = path.join(repoRoot, 'var', 'soak-logs', root);
    const cluster = new Cluster(env, logDir);
    cleanups.push(() => cluster.stop());
    // First replicas together (each migrates its own schema), then the second ones and the gateways.
    log(`starting ${SERVICES.join(', ')}`);
    await Promise.all(SERVICES.map((s) => addReplica(cluster, s, envOf(s))));
    // Migrations ran: from now on every outbox insert is recorded.
    await recordOutboxes(databaseUrl);
    log(`starting the other replicas and ${opts.gateways} gateways`);
    const more: Promise<unknown>[] = [];
    for (let i = 1; i < opts.replicas; i++) for (const s of SERVICES) more.push(addReplica(cluster, s, envOf(s)));
    await Promise.all(more);
    // The gateways one after the other: a gateway's start-up (its API documents) is the heaviest.
    for (let i = 0; i < opts.gateways; i++) await addReplica(cluster, 'gateway', env);
    return {
      postgres,
      nats,
      redis,
      pgProxy,
      natsProxy,
      mail,
      receiver,
      cluster,
      databaseUrl,
      natsUrl: nats.url,
      root,
      operatorToken,
      gateways: cluster.of('gateway').map((g) => g.url),
      replicas: cluster.replicas,
      logDir,
      stop: async () => {
        await stop();
        if (previousNatsUrl === undefined) delete process.env.LOYALTY_NATS_URL;
        else process.env.LOYALTY_NATS_URL = previousNatsUrl;
      },
    };
  } catch (err) {
    await stop();
    throw err;
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
}

/** Current resident memory (VmRSS) of a process, in MB; 0 when it is gone. */
export function rssMb(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round((Number(kb) / 1024) * 10) / 10 : 0;
  } catch {
    return 0;
  }
}

export type { ClusterService };
