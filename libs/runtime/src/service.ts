/**
 * A service is a declaration. Its `setup(rt)` builds the domain from the runtime's connections and
 * returns what the service is made of:
 * - `endpoints`: what it answers (request/reply operations, `endpoints.ts`);
 * - `consumers`: what it listens to (durable event consumers, broadcast listeners, `consumers.ts`);
 * - `tasks`: what it does on its own (periodic tasks, `tasks.ts`);
 * - `caches`: per-replica caches forgotten by broadcast and on a NATS reconnect;
 * - `jobs`: the handlers of its kinds of long work (jobs.ts), run by a `JobRunner` among its tasks;
 * - `purge`: its own tables' rules for the runtime's periodic purge;
 * - `hooks`: typed handles for tests and benchmarks (`running.hooks.sweep()`);
 * - `close`: what to release last (mail connections, HTTP agents, a dispatcher's in-flight work).
 * `runService` migrates, connects, then starts caches, consumers, tasks and endpoints in that order
 * and stops them in the reverse order, then the outbox relay, NATS (drained), the pool and the ops
 * port. A start-up that fails part-way stops what it had started.
 */
import { Subjects, type ServiceName } from '@loyalty/contracts';
import type { z } from 'zod';
import { systemClock, type Clock } from './clock.ts';
import type { commonEnv, databaseEnv } from './config.ts';
import { createPool, type Pool } from './db.ts';
import { migrate } from './migrate.ts';
import { createLogger, type Logger } from './logger.ts';
import { Metrics } from './metrics.ts';
import { type Endpoints, pingEndpoint, serveEndpoints } from './endpoints.ts';
import { connectNats, natsReady, type NatsConnection } from './nats.ts';
import { startOpsServer } from './ops-server.ts';
import { ensureEventStream, Outbox } from './outbox.ts';
import { addJobEndpoints } from './job-endpoints.ts';
import { JobRunner, JobStore, type JobHandler } from './jobs.ts';
import { PeriodicTask } from './periodic-task.ts';
import {
  addTenantDataEndpoint,
  TENANT_EXPORT_JOB,
  TENANT_PURGE_JOB,
  tenantExportJob,
  tenantPurgeJob,
  type TenantTable,
} from './tenant-data.ts';
import { purge, sharedPurgeRules, type PurgeRule } from './purge.ts';

type BaseConfig = z.infer<z.ZodObject<typeof commonEnv & typeof databaseEnv>>;

/** Anything started and stopped with the service: an event consumer, a periodic task, a cache. */
export interface ServicePart {
  start(): void | Promise<void>;
  /** Take no new work; finish what is in progress. */
  stop(): void | Promise<void>;
}

export interface ServiceRuntime {
  name: ServiceName;
  log: Logger;
  pool: Pool;
  nc: NatsConnection;
  subjects: Subjects;
  metrics: Metrics;
  /** The time the service reads (a test's ManualClock, else the system's). */
  clock: Clock;
  /** This service's transactional outbox; its relay runs while the service does. */
  outbox: Outbox;
  /** This service's jobs: create one in a transaction (`store.create`), then `wake()` a runner. */
  jobs: { store: JobStore; wake(): void };
  isStopping(): boolean;
}

/** What `setup` returns: see the top of this file. */
export interface ServiceDeclaration<Hooks> {
  endpoints: Endpoints;
  consumers: ServicePart[];
  tasks: ServicePart[];
  caches: ServicePart[];
  /** Handlers by job kind; a service without long work declares none. */
  jobs?: Record<string, JobHandler<never>>;
  /**
   * Its tables holding tenants' data, children first (tenant-data.ts): the runtime adds the
   * operator's export and purge of a tenant (`internal.tenant_data.start` and their jobs).
   */
  tenantData?: TenantTable[];
  purge?: PurgeRule[];
  hooks: Hooks;
  close?: () => Promise<void>;
}

export interface ServiceDefinition<Hooks> {
  name: ServiceName;
  version: string;
  migrationsDir: string;
  setup: (rt: ServiceRuntime) => Promise<ServiceDeclaration<Hooks>>;
}

export interface RunningService<Hooks = unknown> {
  opsPort: number;
  /** The service's own handles for tests and benchmarks (its declaration's `hooks`). */
  hooks: Hooks;
  /** Run a pass of the purge now (tests; it also runs every PURGE_INTERVAL_MS): rows deleted per table. */
  purgeNow(): Promise<Record<string, number>>;
  /** Run one queued job of this service now, if there is one (tests): whether one ran. */
  runJobNow(): Promise<boolean>;
  stop(): Promise<void>;
}

export interface RunOptions {
  config: BaseConfig;
  log?: Logger;
  /** The time the purge and the domain read (a test's ManualClock). */
  clock?: Clock;
}

/** The connections every service holds, and how to let go of them (after its parts stopped). */
interface Infrastructure {
  rt: ServiceRuntime;
  setStopping(): void;
  /** Where `rt.jobs.wake()` goes once the service's job runner exists. */
  onJobWake(wake: () => void): void;
  release(): Promise<void>;
}

async function connect(definition: ServiceDefinition<unknown>, opts: RunOptions): Promise<Infrastructure> {
  const { config } = opts;
  const { name } = definition;
  const log = opts.log ?? createLogger(name, config.LOG_LEVEL);
  const subjects = new Subjects(config.SUBJECT_ROOT);
  if (config.MIGRATE_ON_START)
    await migrate({ databaseUrl: config.DATABASE_URL, schema: name, dir: definition.migrationsDir, log });
  const pool = createPool(config.DATABASE_URL, config.DATABASE_POOL_SIZE, log, name);
  const nc = await connectNats(config.NATS_URL, name, log, {
    user: config.NATS_USER,
    password: config.NATS_PASSWORD,
    tlsCa: config.NATS_TLS_CA,
  }).catch(async (err: unknown) => {
    await pool.end();
    throw err;
  });
  const metrics = new Metrics(name);
  metrics.databasePool(pool, config.DATABASE_POOL_SIZE);
  const outbox = new Outbox({ pool, nc, subjects, service: name, log, metrics });
  let stopping = false;
  const clock = opts.clock ?? systemClock;
  let wakeJobs = (): void => undefined;
  const jobs = { store: new JobStore(pool, name), wake: () => wakeJobs() };
  const rt: ServiceRuntime = {
    name,
    log,
    pool,
    nc,
    subjects,
    metrics,
    clock,
    outbox,
    jobs,
    isStopping: () => stopping,
  };
  return {
    rt,
    setStopping: () => void (stopping = true),
    onJobWake: (wake) => void (wakeJobs = wake),
    async release() {
      await outbox.stop();
      await nc.drain();
      await pool.end();
    },
  };
}

/**
 * Starts parts in the order given and stops what it started in the reverse order; a part that
 * fails to start stops those before it and the error is passed on.
 */
export async function startInOrder(parts: ServicePart[]): Promise<() => Promise<void>> {
  const started: ServicePart[] = [];
  const stopAll = async () => {
    for (const part of started.reverse()) await part.stop();
    started.length = 0;
  };
  try {
    for (const part of parts) {
      await part.start();
      started.push(part);
    }
  } catch (err) {
    await stopAll();
    throw err;
  }
  return stopAll;
}

/** The runtime's own task: old idempotency records, processed-event ids and the service's dead rows. */
function purgeTask(rt: ServiceRuntime, intervalMs: number, rules: PurgeRule[]): PeriodicTask<Record<string, number>> {
  // Every replica runs it: bounded batches that skip rows another replica's pass holds (purge.ts).
  const all = [...sharedPurgeRules, ...rules];
  return new PeriodicTask({
    name: 'purge',
    intervalMs,
    log: rt.log,
    run: async () => {
      const deleted = await purge(rt.pool, rt.name, all, rt.clock, rt.metrics);
      if (Object.values(deleted).some((n) => n > 0)) rt.log.info({ deleted }, 'purged old rows');
      return deleted;
    },
  });
}

/** The kinds of jobs a service declares, with the tenant export and purge when it lists its tenants' tables. */
function declaredJobs(rt: ServiceRuntime, declared: ServiceDeclaration<unknown>): Record<string, JobHandler<never>> {
  const tables = declared.tenantData;
  if (!tables) return { ...declared.jobs };
  addTenantDataEndpoint(declared.endpoints, rt);
  return {
    ...declared.jobs,
    [TENANT_EXPORT_JOB]: tenantExportJob(rt.name, tables),
    [TENANT_PURGE_JOB]: tenantPurgeJob(rt.name, tables),
  };
}

/** The runner of the service's declared kinds of jobs (none without handlers). */
function jobRunner(rt: ServiceRuntime, handlers: Record<string, JobHandler<never>> | undefined): JobRunner | undefined {
  if (!handlers || Object.keys(handlers).length === 0) return undefined;
  return new JobRunner({ store: rt.jobs.store, pool: rt.pool, handlers, log: rt.log, clock: rt.clock });
}

/** The service's endpoints as a part: served on start (the queue group joined), left on stop. */
function served(rt: ServiceRuntime, version: string, endpoints: Endpoints): ServicePart {
  let stop: (() => Promise<void>) | undefined;
  endpoints.plain('system.ping', pingEndpoint(rt.name, version));
  addJobEndpoints(endpoints, rt.jobs.store, rt.clock);
  return {
    async start() {
      ({ stop } = await serveEndpoints({ ...rt, service: rt.name, version, endpoints }));
    },
    stop: () => stop?.(),
  };
}

/** Run a service declared by `definition`: see the top of this file for the order of things. */
export async function runService<Hooks>(
  definition: ServiceDefinition<Hooks>,
  opts: RunOptions,
): Promise<RunningService<Hooks>> {
  const { config } = opts;
  const infra = await connect(definition, opts);
  const { rt } = infra;
  let stopParts: () => Promise<void> = async () => undefined;
  let close: (() => Promise<void>) | undefined;
  try {
    await ensureEventStream(rt.nc, rt.subjects);
    const declared = await definition.setup(rt);
    close = declared.close;
    const purging = purgeTask(rt, config.PURGE_INTERVAL_MS, declared.purge ?? []);
    const jobs = jobRunner(rt, declaredJobs(rt, declared));
    if (jobs) infra.onJobWake(() => jobs.wake());
    rt.outbox.start();
    stopParts = await startInOrder([
      ...declared.caches,
      ...declared.consumers,
      ...declared.tasks,
      ...(jobs ? [jobs] : []),
      purging,
      served(rt, definition.version, declared.endpoints),
    ]);
    const ops = await startOpsServer({
      host: config.OPS_HOST,
      port: config.OPS_PORT,
      metrics: rt.metrics,
      log: rt.log,
      isShuttingDown: rt.isStopping,
      checks: { postgres: async () => void (await rt.pool.query('SELECT 1')), nats: () => natsReady(rt.nc) },
    });
    rt.log.info({ opsPort: ops.port, subjects: rt.subjects.op(rt.name, '>') }, `${rt.name} ready`);
    return {
      opsPort: ops.port,
      hooks: declared.hooks,
      purgeNow: () => purging.runNow(),
      runJobNow: async () => (jobs ? jobs.runOne() : false),
      async stop() {
        infra.setStopping();
        await stopParts();
        await close?.();
        await infra.release();
        await ops.close();
      },
    };
  } catch (err) {
    infra.setStopping();
    await stopParts();
    await close?.();
    await infra.release();
    throw err;
  }
}
