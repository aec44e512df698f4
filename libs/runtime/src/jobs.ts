import { randomUUID } from 'node:crypto';
import type { Clock } from './clock.ts';
import { withTransaction, type Pool, type PoolClient, type Queryable } from './db.ts';
import type { Logger } from './logger.ts';
import { PeriodicTask } from './periodic-task.ts';

/**
 * Long work (exports, erasures, imports, recomputations, tenant purges) as jobs, in the schema of
 * the service whose data the work changes (`<schema>.jobs`, a shared table), so that each step's
 * effects commit in one transaction with the job's checkpoint and progress: a step is applied
 * once, and whoever resumes the job starts after the last committed step.
 *
 * - A job is created in the caller's transaction (`JobStore.create`), queued.
 * - Every replica runs a `JobRunner`: it leases a queued job (or a running one whose lease ran out:
 *   its replica died) with `FOR UPDATE SKIP LOCKED`, runs its handler step after step, each step
 *   committed under the lease (`commit`), which it extends; a replica that lost its lease stops.
 * - A step that throws is tried again (from the last checkpoint) up to `maxAttempts` times, then
 *   the job fails with the error. A handler ends the job with `succeed` (and its result) or `fail`.
 * - Results are stored in the service's `job_results`, in parts, downloadable until `expires_at`.
 *
 * Handlers make network calls only outside `commit` (no network call inside a transaction); a
 * call's effect must then be idempotent by a key derived from the job and its checkpoint.
 */

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed';

/** An error a job reports (a line of an import, a service that could not erase). */
export interface JobError {
  code: string;
  message: string;
  [detail: string]: unknown;
}

export interface JobRecord {
  id: string;
  tenant_id: number;
  kind: string;
  status: JobStatus;
  params: unknown;
  checkpoint: unknown;
  done: number;
  total: number | null;
  errors: JobError[];
  result_type: string | null;
  result_size: number | null;
  attempts: number;
  created_at: Date;
  finished_at: Date | null;
  expires_at: Date | null;
}

/** How much is done: `total` is null until the handler knows it. */
export interface JobProgress<C> {
  checkpoint: C;
  done: number;
  total?: number | null;
}

/**
 * A job's result: the whole of it (`data`, stored in parts at the end), or parts the handler
 * already stored step by step with `appendResult` (`size` bytes in all), for results streamed
 * out of the database instead of held in memory.
 */
export type JobResult = { contentType: string; data: Buffer } | { contentType: string; stored: true; size: number };

/** What a handler sees of the job it runs, and how it moves it on. */
export interface JobStep<C> {
  readonly id: string;
  readonly tenantId: number;
  readonly kind: string;
  readonly params: unknown;
  /** Where the last committed step ended (undefined before the first). */
  readonly checkpoint: C | undefined;
  readonly done: number;
  readonly total: number | null;
  /** Commit a step: its effects and the new checkpoint and progress, only while the lease is held. */
  commit(effects: ((db: PoolClient) => Promise<void>) | undefined, progress: JobProgress<C>): Promise<void>;
  /** End the job successfully, with its last effects, figures, result and the errors it reports. */
  succeed(
    effects: ((db: PoolClient) => Promise<void>) | undefined,
    outcome: { done: number; total?: number | null; result?: JobResult; errors?: JobError[] },
  ): Promise<void>;
  /** End the job as failed with these errors (nothing more will run). */
  fail(errors: JobError[]): Promise<void>;
  /**
   * Inside a `commit`'s effects: append `data` to part `part` of the result, so a long result is
   * written as the job goes, with its checkpoint. Every part but the last must end up exactly
   * RESULT_PART_BYTES long (the download reads parts until one reaches the result's size).
   */
  appendResult(db: PoolClient, part: number, data: Buffer): Promise<void>;
}

/** A kind of job: called again while it answers 'more', with the step's state after each commit. */
export type JobHandler<C = unknown> = (step: JobStep<C>) => Promise<'more' | 'finished'>;

/** The replica lost the job's lease (it ran too long without committing, or was paused): it stops. */
export class LeaseLost extends Error {
  constructor(id: string) {
    super(`the lease of job ${id} was lost`);
    this.name = 'LeaseLost';
  }
}

/** Part size of a stored result (a part travels in one NATS reply). */
export const RESULT_PART_BYTES = 512 * 1024;

/** How long a finished job's result stays downloadable. */
export const RESULT_TTL_MS = 7 * 24 * 3600 * 1000;

export class JobStore {
  readonly table: string;
  readonly results: string;

  constructor(
    private readonly pool: Pool,
    /** The owning service; its schema holds the tables. */
    private readonly service: string,
  ) {
    this.table = `${service}.jobs`;
    this.results = `${service}.job_results`;
  }

  /** The id callers see, naming the service that runs the job (`job_<service>_<uuid>`), so the gateway can route it. */
  publicId(id: string): string {
    return `job_${this.service}_${id}`;
  }

  /** The row id of one of this service's public job ids; undefined for any other text. */
  rowId(publicId: string): string | undefined {
    const prefix = `job_${this.service}_`;
    const id = publicId.startsWith(prefix) ? publicId.slice(prefix.length) : '';
    return isUuid(id) ? id : undefined;
  }

  /** Queue a job in the caller's transaction; its public id. */
  async create(db: Queryable, job: { tenantId: number; kind: string; params?: unknown; now: Date }): Promise<string> {
    const id = randomUUID();
    await db.query(`INSERT INTO ${this.table} (id, tenant_id, kind, params, created_at) VALUES ($1, $2, $3, $4, $5)`, [
      id,
      job.tenantId,
      job.kind,
      JSON.stringify(job.params ?? {}),
      job.now,
    ]);
    return this.publicId(id);
  }

  /** The tenant's job, or undefined (another tenant's job is not found either). */
  async find(tenantId: number | undefined, publicId: string): Promise<JobRecord | undefined> {
    const id = this.rowId(publicId);
    if (!id) return undefined;
    const { rows } = await this.pool.query<JobRecord>(
      `SELECT id, tenant_id, kind, status, params, checkpoint, done, total, errors, result_type, result_size,
              attempts, created_at, finished_at, expires_at
       FROM ${this.table} WHERE id = $1 AND ($2::bigint IS NULL OR tenant_id = $2)`,
      [id, tenantId ?? null],
    );
    return rows[0];
  }

  /** One part of a job's result (undefined past the last part or once the result has expired). */
  async resultPart(
    tenantId: number | undefined,
    publicId: string,
    part: number,
    now: Date,
  ): Promise<Buffer | undefined> {
    const id = this.rowId(publicId);
    if (!id) return undefined;
    const { rows } = await this.pool.query<{ data: Buffer }>(
      `SELECT r.data FROM ${this.results} r JOIN ${this.table} j ON j.id = r.job_id
       WHERE r.job_id = $1 AND r.part = $2 AND ($3::bigint IS NULL OR j.tenant_id = $3)
         AND j.expires_at > $4`,
      [id, part, tenantId ?? null, now],
    );
    return rows[0]?.data;
  }

  /** Lease a runnable job for `owner`: a queued one, or a running one whose lease is over. */
  async lease(owner: string, leaseMs: number, kinds: string[]): Promise<JobRecord | undefined> {
    return withTransaction(this.pool, async (db) => {
      const { rows } = await db.query<JobRecord>(
        `UPDATE ${this.table} SET status = 'running', lease_owner = $1,
                lease_until = now() + make_interval(secs => $2::double precision / 1000),
                attempts = attempts + 1, started_at = coalesce(started_at, now())
         WHERE id = (SELECT id FROM ${this.table}
                     WHERE kind = ANY($3) AND (status = 'queued' OR (status = 'running' AND lease_until < now()))
                     ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING id, tenant_id, kind, status, params, checkpoint, done, total, errors, result_type, result_size,
                   attempts, created_at, finished_at, expires_at`,
        [owner, leaseMs, kinds],
      );
      return rows[0];
    });
  }

  /** In the step's transaction: the job is still this owner's (locked until commit); else LeaseLost. */
  async hold(db: PoolClient, id: string, owner: string): Promise<void> {
    const { rowCount } = await db.query(
      `SELECT 1 FROM ${this.table} WHERE id = $1 AND lease_owner = $2 AND status = 'running' FOR UPDATE`,
      [id, owner],
    );
    if (rowCount !== 1) throw new LeaseLost(id);
  }

  async saveProgress(db: PoolClient, id: string, leaseMs: number, p: JobProgress<unknown>): Promise<void> {
    await db.query(
      `UPDATE ${this.table} SET checkpoint = $2, done = $3, total = coalesce($4, total),
              lease_until = now() + make_interval(secs => $5::double precision / 1000)
       WHERE id = $1`,
      [id, JSON.stringify(p.checkpoint), p.done, p.total ?? null, leaseMs],
    );
  }

  async finish(
    db: PoolClient,
    id: string,
    outcome: {
      status: 'succeeded' | 'failed';
      done?: number;
      total?: number | null;
      errors: JobError[];
      result?: JobResult;
    },
    now: Date,
  ): Promise<void> {
    const data = outcome.result && 'data' in outcome.result ? outcome.result.data : undefined;
    const size = outcome.result && 'stored' in outcome.result ? outcome.result.size : data?.length;
    const expiresAt = new Date(now.getTime() + RESULT_TTL_MS);
    // Parts stored step by step expire with the result.
    await db.query(`UPDATE ${this.results} SET expires_at = $2 WHERE job_id = $1`, [id, expiresAt]);
    for (let part = 0; data && part * RESULT_PART_BYTES < data.length; part++)
      await db.query(`INSERT INTO ${this.results} (job_id, part, data, expires_at) VALUES ($1, $2, $3, $4)`, [
        id,
        part,
        data.subarray(part * RESULT_PART_BYTES, (part + 1) * RESULT_PART_BYTES),
        expiresAt,
      ]);
    await db.query(
      `UPDATE ${this.table} SET status = $2, done = coalesce($3, done), total = coalesce($4, total), errors = $5,
              result_type = $6, result_size = $7, finished_at = $8, expires_at = $9,
              lease_owner = NULL, lease_until = NULL
       WHERE id = $1`,
      [
        id,
        outcome.status,
        outcome.done ?? null,
        outcome.total ?? null,
        JSON.stringify(outcome.errors),
        outcome.result?.contentType ?? null,
        size ?? null,
        now,
        expiresAt,
      ],
    );
  }

  /** Append to a part of a result a job writes as it goes (kept until the job's result expires). */
  async appendPart(db: PoolClient, id: string, part: number, data: Buffer, now: Date): Promise<void> {
    const { rows } = await db.query<{ size: number }>(
      `INSERT INTO ${this.results} (job_id, part, data, expires_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (job_id, part) DO UPDATE SET data = ${this.results}.data || EXCLUDED.data
       RETURNING length(data) AS size`,
      [id, part, data, new Date(now.getTime() + RESULT_TTL_MS)],
    );
    if ((rows[0]?.size ?? 0) > RESULT_PART_BYTES)
      throw new Error(`a result part is at most ${RESULT_PART_BYTES} bytes`);
  }

  /** Give the lease back at once (a replica stopping gracefully): another replica resumes the job now. */
  async release(id: string, owner: string): Promise<void> {
    await this.pool.query(
      `UPDATE ${this.table} SET lease_until = now() WHERE id = $1 AND lease_owner = $2 AND status = 'running'`,
      [id, owner],
    );
  }

  /**
   * A failed attempt (the handler threw): counted; after `maxAttempts` the job fails with the error,
   * otherwise it may be leased again once `retryDelayMs` has passed.
   */
  async attemptFailed(
    id: string,
    owner: string,
    error: JobError,
    maxAttempts: number,
    now: Date,
    retryDelayMs: (attempts: number) => number = () => 0,
  ): Promise<void> {
    await withTransaction(this.pool, async (db) => {
      const { rows } = await db.query<{ attempts: number }>(
        `SELECT attempts FROM ${this.table} WHERE id = $1 AND lease_owner = $2 AND status = 'running' FOR UPDATE`,
        [id, owner],
      );
      const held = rows[0];
      if (!held) return;
      if (held.attempts >= maxAttempts) await this.finish(db, id, { status: 'failed', errors: [error] }, now);
      else
        await db.query(
          `UPDATE ${this.table} SET lease_until = now() + make_interval(secs => $2::double precision / 1000) WHERE id = $1`,
          [id, retryDelayMs(held.attempts)],
        );
    });
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const isUuid = (s: string) => UUID.test(s);

export interface JobRunnerOptions {
  store: JobStore;
  pool: Pool;
  handlers: Record<string, JobHandler<never>>;
  log: Logger;
  clock: Clock;
  /** How long a lease lasts without a commit (each commit extends it). */
  leaseMs?: number;
  /** How often an idle replica looks for work. */
  intervalMs?: number;
  maxAttempts?: number;
  /**
   * Wait before attempt n+1 after the n-th failed: `retryDelayMs * 2^(n-1)`, at most a minute
   * (default 1 s: 1, 2, 4, 8 s, so five attempts ride out some 15 s of a service being away).
   */
  retryDelayMs?: number;
}

const MAX_RETRY_DELAY_MS = 60_000;

/**
 * Runs the service's jobs in this replica, one at a time: a `ServicePart` (declared among the
 * service's tasks). `wake()` after creating a job starts it without waiting for the interval.
 */
export class JobRunner {
  readonly owner = `${process.pid}-${randomUUID()}`;
  private readonly task: PeriodicTask<boolean>;
  private stopping = false;

  constructor(private readonly opts: JobRunnerOptions) {
    this.task = new PeriodicTask({
      name: 'jobs',
      intervalMs: opts.intervalMs ?? 1000,
      log: opts.log,
      run: () => this.runOne(),
      more: (ran) => ran,
    });
  }

  start(): void {
    this.stopping = false;
    this.task.start();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.task.stop();
  }

  wake(): void {
    this.task.wake();
  }

  /** Lease one job and run it until it ends, the lease is lost or the replica stops; whether one ran. */
  async runOne(): Promise<boolean> {
    const { store, handlers } = this.opts;
    const leaseMs = this.opts.leaseMs ?? 30_000;
    const job = await store.lease(this.owner, leaseMs, Object.keys(handlers));
    if (!job) return false;
    const handler = handlers[job.kind];
    if (!handler) return false;
    const log = this.opts.log.child({ job_id: store.publicId(job.id), job_kind: job.kind, tenant_id: job.tenant_id });
    try {
      await this.steps(job, handler, leaseMs);
    } catch (err) {
      if (err instanceof LeaseLost) {
        log.warn('job lease lost; another replica resumes it');
        return true;
      }
      log.error({ err, attempt: job.attempts }, 'job step failed; it is tried again from its last checkpoint');
      const message = err instanceof Error ? err.message : String(err);
      const base = this.opts.retryDelayMs ?? 1000;
      await store.attemptFailed(
        job.id,
        this.owner,
        { code: 'job_step_failed', message },
        this.maxAttempts,
        this.now(),
        (n) => Math.min(base * 2 ** Math.max(n - 1, 0), MAX_RETRY_DELAY_MS),
      );
    }
    return true;
  }

  private get maxAttempts(): number {
    return this.opts.maxAttempts ?? 5;
  }

  private now(): Date {
    return this.opts.clock.now();
  }

  private async steps(job: JobRecord, handler: JobHandler<never>, leaseMs: number): Promise<void> {
    const state = { checkpoint: job.checkpoint, done: job.done, total: job.total, ended: false };
    const step = this.stepOf(job, state, leaseMs);
    while (!state.ended) {
      if (this.stopping) {
        await this.opts.store.release(job.id, this.owner);
        return;
      }
      const answer = await handler(step);
      if (answer === 'finished' && !state.ended)
        throw new Error(`job handler ${job.kind} finished without succeed or fail`);
    }
  }

  private stepOf(
    job: JobRecord,
    state: { checkpoint: unknown; done: number; total: number | null; ended: boolean },
    leaseMs: number,
  ): JobStep<never> {
    const { store, pool } = this.opts;
    const owner = this.owner;
    const now = () => this.now();
    const inLease = async (fn: (db: PoolClient) => Promise<void>) =>
      withTransaction(pool, async (db) => {
        await store.hold(db, job.id, owner);
        await fn(db);
      });
    return {
      id: store.publicId(job.id),
      tenantId: Number(job.tenant_id),
      kind: job.kind,
      params: job.params,
      get checkpoint() {
        // eslint-disable-next-line @typescript-eslint/consistent-type-assertions -- the checkpoint is what this kind's handler committed
        return state.checkpoint as never;
      },
      get done() {
        return state.done;
      },
      get total() {
        return state.total;
      },
      async commit(effects, progress) {
        await inLease(async (db) => {
          await effects?.(db);
          await store.saveProgress(db, job.id, leaseMs, progress);
        });
        Object.assign(state, {
          checkpoint: progress.checkpoint,
          done: progress.done,
          total: progress.total ?? state.total,
        });
      },
      async succeed(effects, outcome) {
        await inLease(async (db) => {
          await effects?.(db);
          await store.finish(db, job.id, { status: 'succeeded', errors: outcome.errors ?? [], ...outcome }, now());
        });
        state.ended = true;
      },
      async fail(errors) {
        await inLease((db) => store.finish(db, job.id, { status: 'failed', errors }, now()));
        state.ended = true;
      },
      appendResult: (db, part, data) => store.appendPart(db, job.id, part, data, now()),
    };
  }
}
