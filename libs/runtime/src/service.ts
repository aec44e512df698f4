import { Subjects, type ServiceName } from '@loyalty/contracts';
import type { z } from 'zod';
import { systemClock, type Clock } from './clock.ts';
import type { commonEnv, databaseEnv } from './config.ts';
import { createPool, migrate, type Pool } from './db.ts';
import { createLogger, type Logger } from './logger.ts';
import { Metrics } from './metrics.ts';
import { type Endpoints, pingEndpoint, serveEndpoints } from './endpoints.ts';
import { connectNats, natsReady, type NatsConnection } from './nats.ts';
import { startOpsServer } from './ops-server.ts';
import { ensureEventStream, Outbox } from './outbox.ts';
import { PeriodicTask } from './periodic-task.ts';
import { purge, sharedPurgeRules, type PurgeRule } from './purge.ts';

type BaseConfig = z.infer<z.ZodObject<typeof commonEnv & typeof databaseEnv>>;

export interface ServiceRuntime {
  name: ServiceName;
  log: Logger;
  pool: Pool;
  nc: NatsConnection;
  subjects: Subjects;
  metrics: Metrics;
  /** This service's transactional outbox; its relay runs while the service does. */
  outbox: Outbox;
  isStopping(): boolean;
}

export interface RunningService {
  opsPort: number;
  /** Run a pass of the purge now (tests; it also runs every PURGE_INTERVAL_MS): rows deleted per table. */
  purgeNow(): Promise<Record<string, number>>;
  stop(): Promise<void>;
}

/**
 * The common start-up of a service that owns a Postgres schema: migrations, pool, NATS, the event
 * stream, the outbox, metrics, the ops port; then `setup` wires the domain and returns the
 * endpoint table (and what to stop). Stopping: leave the queue group, answer what is in flight,
 * stop background work and the outbox relay, drain NATS, close the pool.
 */
export async function runService(opts: {
  name: ServiceName;
  version: string;
  config: BaseConfig;
  migrationsDir: string;
  log?: Logger;
  /** The time the purge compares with (a test's ManualClock). */
  clock?: Clock;
  /**
   * Wires the domain. `purge`: the service's own tables' rules, purged with the shared tables by
   * the runtime's one periodic purge.
   */
  setup: (rt: ServiceRuntime) => Promise<{ endpoints: Endpoints; stop?: () => Promise<void>; purge?: PurgeRule[] }>;
}): Promise<RunningService> {
  const { config, name } = opts;
  const log = opts.log ?? createLogger(name, config.LOG_LEVEL);
  const subjects = new Subjects(config.SUBJECT_ROOT);
  if (config.MIGRATE_ON_START)
    await migrate({ databaseUrl: config.DATABASE_URL, schema: name, dir: opts.migrationsDir, log });
  const pool = createPool(config.DATABASE_URL, config.DATABASE_POOL_SIZE, log, name);
  const nc = await connectNats(config.NATS_URL, name, log, {
    user: config.NATS_USER,
    password: config.NATS_PASSWORD,
    tlsCa: config.NATS_TLS_CA,
  });
  const metrics = new Metrics(name);
  await ensureEventStream(nc, subjects);
  const outbox = new Outbox({ pool, nc, subjects, service: name, log, metrics });
  let stopping = false;
  const rt: ServiceRuntime = { name, log, pool, nc, subjects, metrics, outbox, isStopping: () => stopping };
  const wired = await opts.setup(rt);
  wired.endpoints.plain('system.ping', pingEndpoint(name, opts.version));
  outbox.start();
  // Old idempotency records, processed-event ids and the service's own dead rows, in every replica:
  // bounded batches that skip rows another replica's pass holds (purge.ts).
  const purgeRules = [...sharedPurgeRules, ...(wired.purge ?? [])];
  const purgeTask = new PeriodicTask({
    name: 'purge',
    intervalMs: config.PURGE_INTERVAL_MS,
    log,
    run: async () => {
      const deleted = await purge(pool, name, purgeRules, opts.clock ?? systemClock, metrics);
      if (Object.values(deleted).some((n) => n > 0)) log.info({ deleted }, 'purged old rows');
      return deleted;
    },
  });
  purgeTask.start();
  const served = await serveEndpoints({
    nc,
    subjects,
    service: name,
    version: opts.version,
    endpoints: wired.endpoints,
    log,
    metrics,
  });
  const ops = await startOpsServer({
    host: config.OPS_HOST,
    port: config.OPS_PORT,
    metrics,
    log,
    isShuttingDown: () => stopping,
    checks: {
      postgres: async () => void (await pool.query('SELECT 1')),
      nats: () => natsReady(nc),
    },
  });
  log.info({ opsPort: ops.port, subjects: subjects.op(name, '>') }, `${name} ready`);
  return {
    opsPort: ops.port,
    purgeNow: () => purgeTask.runNow(),
    async stop() {
      stopping = true;
      await served.stop();
      await purgeTask.stop();
      await wired.stop?.();
      await outbox.stop();
      await nc.drain();
      await pool.end();
      await ops.close();
    },
  };
}
