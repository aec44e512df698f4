import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AppError } from '@loyalty/contracts';
import { createTestDatabase } from '../../../test/support/system.ts';
import {
  createLogger,
  createPool,
  isReplay,
  migrate,
  ReplayStore,
  requestHash,
  withTransaction,
  type Pool,
} from '../src/index.ts';

/**
 * `ReplayStore.steps`: an operation of several commits under one Idempotency-Key, over a real
 * PostgreSQL. The key is held while the steps run; a failure forgets it; a holder that died is
 * taken over once its lease is over.
 */
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: Pool;
let store: ReplayStore;
const log = createLogger('test', 'silent');

beforeAll(async () => {
  db = await createTestDatabase();
  await migrate({ databaseUrl: db.url, schema: 'svc', dir: mkdtempSync(path.join(tmpdir(), 'no-migrations-')), log });
  pool = createPool(db.url, 4, log, 'replay-steps-test');
  store = new ReplayStore(pool, 'svc');
});
afterAll(async () => {
  await pool.end();
  await db.drop();
});

const key = (k: string, data: unknown = { n: 1 }) => ({ tenantId: 1, key: k, operation: 'op', data });

/** Steps that end by storing their answer in their last transaction, as services write them. */
const finish = (k: ReturnType<typeof key>, answer: { id: number }) =>
  withTransaction(pool, async (tx) => {
    await store.save(tx, k, answer);
    return answer;
  });

it('answers a second attempt 409 in progress while the first runs, then replays the first answer', async () => {
  const k = key('a');
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const first = store.steps(k, async () => {
    await gate;
    return finish(k, { id: 7 });
  });
  await expect
    .poll(async () => (await pool.query(`SELECT response FROM svc.idempotency_keys WHERE key = 'a'`)).rows)
    .toEqual([{ response: null }]);
  let ran = false;
  await expect(
    store.steps(k, async () => {
      ran = true;
      return finish(k, { id: 8 });
    }),
  ).rejects.toMatchObject({ code: 'idempotency_in_progress' });
  release();
  expect(await first).toEqual({ id: 7 });
  const again = await store.steps(k, () => finish(k, { id: 9 }));
  expect(again).toEqual({ id: 7 });
  expect(isReplay(again)).toBe(true);
  expect(ran).toBe(false);
});

it('forgets the key when the steps fail, so a retry runs them again', async () => {
  const k = key('b');
  await expect(
    store.steps(k, () => {
      throw new AppError('insufficient_points');
    }),
  ).rejects.toMatchObject({ code: 'insufficient_points' });
  expect(await store.steps(k, () => finish(k, { id: 1 }))).toEqual({ id: 1 });
});

it('refuses the same key with other parameters, running or answered', async () => {
  const k = key('c');
  await store.steps(k, () => finish(k, { id: 2 }));
  await expect(store.steps(key('c', { n: 2 }), () => finish(k, { id: 3 }))).rejects.toMatchObject({
    code: 'idempotency_key_reused',
  });
});

it('lets a retry take over a key whose holder died, once the lease is over', async () => {
  const k = key('d');
  // A holder that died after taking the key: its row stays in progress.
  await pool.query(
    `INSERT INTO svc.idempotency_keys (tenant_id, key, request_hash, created_at)
     VALUES (1, 'd', $1, now() - interval '1 minute')`,
    [requestHash('op', { n: 1 })],
  );
  await expect(store.steps(k, () => finish(k, { id: 4 }), 120_000)).rejects.toMatchObject({
    code: 'idempotency_in_progress',
  });
  expect(await store.steps(k, () => finish(k, { id: 5 }), 30_000)).toEqual({ id: 5 });
});
