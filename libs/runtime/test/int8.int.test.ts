import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/system.ts';
import { createLogger, createPool, type Pool } from '../src/index.ts';

/** int8 values are read as JS numbers only when exact (db.ts parseInt8). */
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 1, createLogger('test', 'silent'), 'int8-test');
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

it('reads int8 values up to 2^53 - 1 exactly and refuses larger ones instead of rounding them', async () => {
  const { rows } = await pool.query<{ max: number; min: number; limit: number }>(
    'SELECT 9007199254740991::int8 AS max, (-9007199254740991)::int8 AS min, 1000000000000000::int8 AS limit',
  );
  expect(rows[0]).toEqual({ max: Number.MAX_SAFE_INTEGER, min: -Number.MAX_SAFE_INTEGER, limit: 10 ** 15 });
  // 2^53 + 1 would read as 2^53; 2^63 - 1 as 2^63
  await expect(pool.query('SELECT 9007199254740993::int8 AS v')).rejects.toThrow(/int8 value 9007199254740993 /);
  await expect(pool.query('SELECT 9223372036854775807::int8 AS v')).rejects.toThrow(/outside the exact range/);
  // the one connection of the pool stays usable after the refused row
  const again = await pool.query<{ n: number }>('SELECT count(*) AS n FROM generate_series(1, 3)');
  expect(again.rows[0]!.n).toBe(3);
});
