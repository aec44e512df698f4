import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/system.ts';
import { createLogger, createPool, Metrics, type Pool } from '../src/index.ts';

/** The database pool's use is on /metrics: busy and idle connections, waiting queries, the size. */
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: Pool;
const metrics = new Metrics('ledger');

beforeAll(async () => {
  database = await createTestDatabase();
  pool = createPool(database.url, 2, createLogger('ledger', 'silent'), 'pool-metrics-test');
  metrics.databasePool(pool, 2);
});
afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

async function values(): Promise<Record<string, number>> {
  const text = await metrics.registry.metrics();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^(loyalty_db_pool_[a-z_]+)(?:\{([^}]*)\})? (\S+)$/gm)) {
    const state = /state="([a-z]+)"/.exec(m[2] ?? '')?.[1];
    out[state ? `${m[1]}:${state}` : m[1]!] = Number(m[3]);
  }
  return out;
}

it('reports busy, idle and waiting as the pool is used, and its size', async () => {
  expect(await values()).toEqual({
    'loyalty_db_pool_connections:busy': 0,
    'loyalty_db_pool_connections:idle': 0,
    loyalty_db_pool_waiting: 0,
    loyalty_db_pool_max: 2,
  });
  const a = await pool.connect();
  const b = await pool.connect();
  const third = pool.connect(); // the pool is exhausted: this one waits
  await new Promise((r) => setTimeout(r, 20));
  expect(await values()).toMatchObject({
    'loyalty_db_pool_connections:busy': 2,
    'loyalty_db_pool_connections:idle': 0,
    loyalty_db_pool_waiting: 1,
  });
  a.release();
  const c = await third;
  b.release();
  c.release();
  expect(await values()).toMatchObject({
    'loyalty_db_pool_connections:busy': 0,
    'loyalty_db_pool_connections:idle': 2,
    loyalty_db_pool_waiting: 0,
  });
});
