import { Subjects, type ServiceName } from '@loyalty/contracts';
import type { z } from 'zod';
import type { commonEnv, databaseEnv } from './config.ts';
import { createPool, migrate, type Pool } from './db.ts';
import { createLogger, type Logger } from './logger.ts';
import { Metrics } from './metrics.ts';
import { connectNats, natsReady, serveEndpoints, type Endpoint, type NatsConnection } from './nats.ts';
import { startOpsServer } from './ops-server.ts';

type BaseConfig = z.infer<z.ZodObject<typeof commonEnv & typeof databaseEnv>>;

export interface ServiceRuntime {
  name: ServiceName;
  log: Logger;
  pool: Pool;
  nc: NatsConnection;
  subjects: Subjects;
  metrics: Metrics;
  isStopping(): boolean;
}

export interface RunningService {
  opsPort: number;
  stop(): Promise<void>;
}

/**
 * The common start-up of a service that owns a Postgres schema: migrations, pool, NATS, metrics,
 * the ops port; then `setup` wires the domain and returns the endpoint table (and what to stop).
 * Stopping: leave the queue group, answer what is in flight, stop background work, drain NATS,
 * close the pool.
 */
export async function runService(opts: {
  name: ServiceName;
  version: string;
  config: BaseConfig;
  migrationsDir: string;
  log?: Logger;
  setup: (rt: ServiceRuntime) => Promise<{ endpoints: Record<string, Endpoint<never>>; stop?: () => Promise<void> }>;
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
  let stopping = false;
  const rt: ServiceRuntime = { name, log, pool, nc, subjects, metrics, isStopping: () => stopping };
  const wired = await opts.setup(rt);
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
    async stop() {
      stopping = true;
      await served.stop();
      await wired.stop?.();
      await nc.drain();
      await pool.end();
      await ops.close();
    },
  };
}

/** The endpoint every service answers so callers (and tests) can tell it is there. */
export function pingEndpoint(name: string, version: string): Endpoint<never> {
  return { handler: async () => ({ service: name, version, status: 'ok' }) };
}
