import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, testPool } from '../../../test/support/system.ts';
import { until } from '../../../test/support/until.ts';
import { createLogger, migrate } from '../src/index.ts';

/**
 * Migrations over a real PostgreSQL: no-transaction migrations (`*.no-transaction.sql`) run in
 * name order between the ordinary ones, build indexes CONCURRENTLY while writes go on, recover an
 * index an interrupted build left invalid, and a migration converted after it was applied counts
 * as applied (an upgrade runs nothing again and still passes the order check).
 */
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let admin: pg.Pool;
const log = createLogger('test', 'silent');

beforeAll(async () => {
  db = await createTestDatabase();
  admin = testPool(db.url, 4);
});
afterAll(async () => {
  await admin?.end();
  await db?.drop();
});

function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'migrations-'));
  for (const [name, sql] of Object.entries(files)) writeFileSync(path.join(dir, name), `-- Up Migration\n${sql}\n`);
  return dir;
}

async function indexValid(schema: string, name: string): Promise<boolean | undefined> {
  const { rows } = await admin.query<{ valid: boolean }>(
    `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`,
    [schema, name],
  );
  return rows[0]?.valid;
}

const names = async (table: string) =>
  (await admin.query<{ name: string }>(`SELECT name FROM ${table} ORDER BY name`)).rows.map((r) => r.name);

describe('no-transaction migrations', () => {
  it('run in name order between ordinary ones, each recorded where it belongs', async () => {
    const dir = folder({
      '0001_big.sql': 'CREATE TABLE big (id bigint, at timestamptz);',
      '0002_big_at.no-transaction.sql': 'CREATE INDEX CONCURRENTLY IF NOT EXISTS big_at ON big (at);',
      // Depends on the index of the no-transaction migration before it.
      '0003_uses.sql': `COMMENT ON INDEX big_at IS 'built concurrently';`,
    });
    await migrate({ databaseUrl: db.url, schema: 'order_test', dir, log });
    expect(await indexValid('order_test', 'big_at')).toBe(true);
    expect(await names('order_test.migrations')).toEqual(['0001_big', '0003_uses']);
    expect(await names('order_test.migrations_no_transaction')).toEqual(['0002_big_at']);
    // The shared tables' purge indexes are built the same way.
    expect(await names('order_test.runtime_migrations_no_transaction')).toEqual(['1600000000002_purge_indexes']);
    expect(await indexValid('order_test', 'idempotency_keys_created_at')).toBe(true);
    // Applied again: nothing runs.
    await migrate({ databaseUrl: db.url, schema: 'order_test', dir, log });
    expect(await names('order_test.migrations_no_transaction')).toEqual(['0002_big_at']);
  });

  it('let writes go on while the index builds (a plain CREATE INDEX would block them)', async () => {
    const schema = 'writes_test';
    await migrate({
      databaseUrl: db.url,
      schema,
      dir: folder({ '0001_big.sql': 'CREATE TABLE big (id bigint);' }),
      log,
    });
    // A transaction that wrote to the table and stays open: the build waits for it to end.
    const writer = await admin.connect();
    await writer.query(`BEGIN; INSERT INTO ${schema}.big VALUES (1)`);
    const building = migrate({
      databaseUrl: db.url,
      schema,
      dir: folder({
        '0001_big.sql': 'CREATE TABLE big (id bigint);',
        '0002_big_id.no-transaction.sql': 'CREATE INDEX CONCURRENTLY IF NOT EXISTS big_id ON big (id);',
      }),
      log,
    });
    await until(async () => {
      const { rows } = await admin.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'CREATE INDEX CONCURRENTLY%big_id%'`,
      );
      return rows.length > 0;
    }, 10_000);
    // Another write meanwhile answers at once.
    const other = await admin.connect();
    try {
      await other.query(`SET statement_timeout = '2s'`);
      await other.query(`INSERT INTO ${schema}.big VALUES (2)`);
    } finally {
      other.release();
    }
    await writer.query('COMMIT');
    writer.release();
    await building;
    expect(await indexValid(schema, 'big_id')).toBe(true);

    // The contrast: a plain CREATE INDEX behind an open writer makes the next write wait.
    const holder = await admin.connect();
    await holder.query(`BEGIN; INSERT INTO ${schema}.big VALUES (3)`);
    const blocking = admin.query(`CREATE INDEX big_plain ON ${schema}.big (id)`);
    await until(async () => {
      const { rows } = await admin.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'CREATE INDEX big_plain%' AND wait_event_type = 'Lock'`,
      );
      return rows.length > 0;
    }, 10_000);
    const blocked = await admin.connect();
    try {
      await blocked.query(`SET statement_timeout = '1s'`);
      await expect(blocked.query(`INSERT INTO ${schema}.big VALUES (4)`)).rejects.toThrow(/statement timeout/);
    } finally {
      blocked.release();
    }
    await holder.query('COMMIT');
    holder.release();
    await blocking;
  });

  it('build again an index an interrupted build left invalid', async () => {
    const schema = 'invalid_test';
    const first = {
      '0001_codes.sql': `CREATE TABLE codes (code text); INSERT INTO codes VALUES ('a'), ('a');`,
      '0002_codes_unique.no-transaction.sql':
        'CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS codes_unique ON codes (code);',
    };
    // The duplicate makes the build fail part-way: PostgreSQL leaves the index, invalid.
    await expect(migrate({ databaseUrl: db.url, schema, dir: folder(first), log })).rejects.toThrow(/unique index/);
    expect(await indexValid(schema, 'codes_unique')).toBe(false);
    expect(await names(`${schema}.migrations_no_transaction`)).toEqual([]);
    // Fixed, the next start drops the invalid index and builds it again (IF NOT EXISTS alone would keep it).
    await admin.query(`DELETE FROM ${schema}.codes WHERE ctid IN (SELECT ctid FROM ${schema}.codes LIMIT 1)`);
    await migrate({ databaseUrl: db.url, schema, dir: folder(first), log });
    expect(await indexValid(schema, 'codes_unique')).toBe(true);
    expect(await names(`${schema}.migrations_no_transaction`)).toEqual(['0002_codes_unique']);
  });

  it('count a migration converted to no-transaction after it was applied, and keep the order check', async () => {
    const schema = 'upgrade_test';
    const dir = folder({
      '0001_big.sql': 'CREATE TABLE big (id bigint);',
      '0002_big_id.sql': 'CREATE INDEX big_id ON big (id);',
      '0003_more.sql': 'ALTER TABLE big ADD COLUMN at timestamptz;',
    });
    await migrate({ databaseUrl: db.url, schema, dir, log });
    // The new release: 0002 converted, a new ordinary 0004 after it.
    renameSync(path.join(dir, '0002_big_id.sql'), path.join(dir, '0002_big_id.no-transaction.sql'));
    writeFileSync(
      path.join(dir, '0002_big_id.no-transaction.sql'),
      '-- Up Migration\nCREATE INDEX CONCURRENTLY IF NOT EXISTS big_id ON big (id);\n',
    );
    writeFileSync(path.join(dir, '0004_later.sql'), '-- Up Migration\nALTER TABLE big ADD COLUMN note text;\n');
    await migrate({ databaseUrl: db.url, schema, dir, log });
    expect(await names(`${schema}.migrations`)).toEqual(['0001_big', '0003_more', '0004_later']);
    expect(await names(`${schema}.migrations_no_transaction`)).toEqual(['0002_big_id']);
    expect(await indexValid(schema, 'big_id')).toBe(true);
  });
});

describe('the shared tables', () => {
  it('store a large event payload and a large replayed answer compressed with lz4', async () => {
    const schema = 'lz4_test';
    await migrate({ databaseUrl: db.url, schema, dir: folder({ '0001_none.sql': 'SELECT 1;' }), log });
    const big = { data: Array.from({ length: 60 }, (_, k) => ({ rule_id: k, name: `Rule number ${k}`, points: k })) };
    await admin.query(`INSERT INTO ${schema}.outbox (id, subject, payload) VALUES (gen_random_uuid(), 's', $1)`, [
      JSON.stringify(big),
    ]);
    await admin.query(
      `INSERT INTO ${schema}.idempotency_keys (tenant_id, key, request_hash, response) VALUES (1, 'k', 'h', $1)`,
      [JSON.stringify(big)],
    );
    const { rows } = await admin.query<{ payload: string; response: string; same: boolean }>(
      `SELECT pg_column_compression(o.payload) AS payload, pg_column_compression(k.response) AS response,
              o.payload = $1::text::jsonb AND k.response = $1::text AS same
         FROM ${schema}.outbox o, ${schema}.idempotency_keys k`,
      [JSON.stringify(big)],
    );
    expect(rows).toEqual([{ payload: 'lz4', response: 'lz4', same: true }]);
  });
});
