import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/system.ts';
import {
  createLogger,
  createPool,
  JobRunner,
  JobStore,
  migrate,
  RESULT_PART_BYTES,
  systemClock,
  withTransaction,
  type JobHandler,
  type Pool,
} from '../src/index.ts';

/**
 * Jobs over a real PostgreSQL: steps committed with their checkpoint, a job resumed by another
 * replica when the one running it stops answering (its lease runs out), each step applied once,
 * failed steps tried again then reported, results stored in parts and read back by tenant.
 */
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: Pool;
let store: JobStore;
const log = createLogger('test', 'silent');
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate({ databaseUrl: db.url, schema: 'svc', dir: mkdtempSync(path.join(tmpdir(), 'no-migrations-')), log });
  pool = createPool(db.url, 6, log, 'jobs-test');
  await pool.query('CREATE TABLE svc.effects (job_id text NOT NULL, n integer NOT NULL, PRIMARY KEY (job_id, n))');
  store = new JobStore(pool, 'svc');
});
afterAll(async () => {
  await pool.end();
  await db.drop();
});

const queue = (kind: string, params: unknown = {}, tenantId = 1) =>
  withTransaction(pool, (tx) => store.create(tx, { tenantId, kind, params, now: new Date() }));

const runner = (handlers: Record<string, JobHandler<never>>, leaseMs = 30_000, retryDelayMs = 0) =>
  new JobRunner({
    store,
    pool,
    handlers,
    log,
    clock: systemClock,
    leaseMs,
    intervalMs: 50,
    maxAttempts: 3,
    retryDelayMs,
  });

/** Counts to `params.to`, one effect row per step, then succeeds with a result of `params.bytes` bytes. */
const counting =
  (opts: { hang?: (n: number) => Promise<void> } = {}): JobHandler<{ n: number }> =>
  async (step) => {
    const { to, bytes } = step.params as { to: number; bytes?: number };
    const n = (step.checkpoint?.n ?? 0) + 1;
    await opts.hang?.(n);
    const effect = async (tx: Parameters<NonNullable<Parameters<typeof step.commit>[0]>>[0]) => {
      await tx.query('INSERT INTO svc.effects (job_id, n) VALUES ($1, $2)', [step.id, n]);
    };
    if (n < to) {
      await step.commit(effect, { checkpoint: { n }, done: n, total: to });
      return 'more';
    }
    const data = Buffer.alloc(bytes ?? 0, 7);
    await step.succeed(effect, { done: n, total: to, result: { contentType: 'application/octet-stream', data } });
    return 'finished';
  };

const effectsOf = async (id: string) =>
  (await pool.query<{ n: number }>('SELECT n FROM svc.effects WHERE job_id = $1 ORDER BY n', [id])).rows.map(
    (r) => r.n,
  );

describe('jobs', () => {
  it('runs a job step by step to its result, stored in parts and readable by its tenant only', async () => {
    const id = await queue('count', { to: 3, bytes: RESULT_PART_BYTES * 2 + 10 });
    const r = runner({ count: counting() as JobHandler<never> });
    expect(await r.runOne()).toBe(true);
    const job = await store.find(1, id);
    expect(job).toMatchObject({
      status: 'succeeded',
      done: 3,
      total: 3,
      errors: [],
      result_size: RESULT_PART_BYTES * 2 + 10,
    });
    expect(await effectsOf(id)).toEqual([1, 2, 3]);
    const now = new Date();
    const parts = await Promise.all([0, 1, 2, 3].map((p) => store.resultPart(1, id, p, now)));
    expect(parts.map((p) => p?.length)).toEqual([RESULT_PART_BYTES, RESULT_PART_BYTES, 10, undefined]);
    expect(await store.find(2, id)).toBeUndefined();
    expect(await store.resultPart(2, id, 0, now)).toBeUndefined();
    expect(await store.find(1, 'not-a-uuid')).toBeUndefined();
    // Past its expiry the result is gone.
    expect(await store.resultPart(1, id, 0, new Date(now.getTime() + 8 * 24 * 3600 * 1000))).toBeUndefined();
  });

  it('is resumed by another replica from its last checkpoint when its replica stops answering; each step once', async () => {
    const id = await queue('count', { to: 5 });
    let wakeDead!: () => void;
    const dead = new Promise<void>((r) => (wakeDead = r));
    // The first replica commits steps 1 and 2, then stands still (a paused process) past its lease.
    const first = runner(
      { count: counting({ hang: (n) => (n === 3 ? dead : Promise.resolve()) }) as JobHandler<never> },
      300,
    );
    const stalled = first.runOne();
    await expect.poll(async () => (await store.find(1, id))?.done).toBe(2);
    await sleep(400);
    const second = runner({ count: counting() as JobHandler<never> }, 300);
    expect(await second.runOne()).toBe(true);
    expect(await store.find(1, id)).toMatchObject({ status: 'succeeded', done: 5, attempts: 2 });
    // The first wakes up: its next commit finds the lease gone and applies nothing.
    wakeDead();
    expect(await stalled).toBe(true);
    expect(await effectsOf(id)).toEqual([1, 2, 3, 4, 5]);
  });

  it('tries a failing step again from the last checkpoint, then fails the job with the error', async () => {
    const flaky = await queue('flaky', { to: 3 });
    let throws = 1;
    const handler = counting({
      hang: async (n) => {
        if (n === 2 && throws-- > 0) throw new Error('the database went away');
      },
    });
    const r = runner({ flaky: handler as JobHandler<never> });
    await r.runOne(); // step 1 committed, step 2 throws
    expect(await store.find(1, flaky)).toMatchObject({ status: 'running', done: 1 });
    await r.runOne(); // resumed at step 2
    expect(await store.find(1, flaky)).toMatchObject({ status: 'succeeded', done: 3 });
    expect(await effectsOf(flaky)).toEqual([1, 2, 3]);

    const broken = await queue('broken');
    const failing = runner({
      broken: (async () => {
        throw new Error('always');
      }) as JobHandler<never>,
    });
    for (let i = 0; i < 3; i++) await failing.runOne();
    expect(await store.find(1, broken)).toMatchObject({
      status: 'failed',
      attempts: 3,
      errors: [{ code: 'job_step_failed', message: 'always' }],
    });
    expect(await failing.runOne()).toBe(false); // nothing left to run
  });

  it('waits before trying a failed step again, twice as long after each failure', async () => {
    const id = await queue('backoff', { to: 2 });
    let throws = 2;
    const handler = counting({
      hang: async (n) => {
        if (n === 1 && throws-- > 0) throw new Error('the ledger is away');
      },
    });
    const r = runner({ backoff: handler as JobHandler<never> }, 30_000, 300);
    expect(await r.runOne()).toBe(true); // attempt 1 fails: next not before 300 ms
    const failedAt = Date.now();
    expect(await r.runOne()).toBe(false);
    expect(await store.find(1, id)).toMatchObject({ status: 'running', attempts: 1, done: 0 });
    await expect.poll(() => r.runOne(), { timeout: 5_000, interval: 20 }).toBe(true); // attempt 2 fails
    expect(Date.now() - failedAt).toBeGreaterThanOrEqual(280);
    const secondAt = Date.now();
    expect(await r.runOne()).toBe(false);
    await expect.poll(() => r.runOne(), { timeout: 5_000, interval: 20 }).toBe(true); // attempt 3 succeeds
    expect(Date.now() - secondAt).toBeGreaterThanOrEqual(580);
    expect(await store.find(1, id)).toMatchObject({ status: 'succeeded', attempts: 3, done: 2 });
    expect(await effectsOf(id)).toEqual([1, 2]);
  });

  it('runs every job once with several replicas working at the same time', async () => {
    const ids = await Promise.all(Array.from({ length: 12 }, () => queue('many', { to: 3 })));
    const replicas = [1, 2, 3].map(() => runner({ many: counting() as JobHandler<never> }));
    for (const r of replicas) r.start();
    try {
      await expect
        .poll(
          async () =>
            (
              await pool.query<{ n: number }>(
                `SELECT count(*)::int AS n FROM svc.jobs WHERE kind = 'many' AND status = 'succeeded'`,
              )
            ).rows[0]?.n,
          { timeout: 15_000 },
        )
        .toBe(12);
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
    }
    for (const id of ids) expect(await effectsOf(id)).toEqual([1, 2, 3]);
  });

  it('gives its lease back when the replica stops, so another replica resumes at once', async () => {
    const id = await queue('slow', { to: 50 });
    const slowly = counting({ hang: () => sleep(20) });
    const a = runner({ slow: slowly as JobHandler<never> }, 60_000);
    a.start();
    await expect.poll(async () => (await store.find(1, id))?.done ?? 0).toBeGreaterThan(2);
    await a.stop();
    const stoppedAt = (await store.find(1, id))?.done ?? 0;
    expect(stoppedAt).toBeLessThan(50);
    const b = runner({ slow: counting() as JobHandler<never> }, 60_000);
    expect(await b.runOne()).toBe(true); // no wait for the 60 s lease
    expect(await store.find(1, id)).toMatchObject({ status: 'succeeded', done: 50 });
    expect(await effectsOf(id)).toEqual(Array.from({ length: 50 }, (_x, i) => i + 1));
  });
});
