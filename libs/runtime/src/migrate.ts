import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from './logger.ts';
import { sharedMigrations } from './shared-tables.ts';

/**
 * The file name ending of a migration that runs outside any transaction, one statement at a time:
 * `CREATE INDEX CONCURRENTLY` (which PostgreSQL refuses inside a transaction) on a table that can
 * be large, so that building the index does not block writes. See docs/operations.md (migrations).
 */
export const NO_TRANSACTION_SUFFIX = '.no-transaction.sql';

/** The name a migration is recorded under: its file name without `.sql` (or the no-transaction ending). */
export function migrationName(file: string): string {
  return file.endsWith(NO_TRANSACTION_SUFFIX) ? file.slice(0, -NO_TRANSACTION_SUFFIX.length) : file.slice(0, -4);
}

/**
 * The statements of a migration's up section, for a no-transaction migration: comment lines
 * dropped, split at each `;` that ends a line. Such a migration holds plain statements only (no
 * function bodies or strings with `;` at a line's end).
 */
export function upStatements(sql: string): string[] {
  const up = sql.split(/^\s*--\s*Down Migration/im)[0] ?? '';
  return up
    .split('\n')
    .filter((line) => !/^\s*--/.test(line))
    .join('\n')
    .split(/;\s*$/m)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

const CONCURRENT_INDEX = /^CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+(?:IF\s+NOT\s+EXISTS\s+)?"?([A-Za-z0-9_]+)"?/i;

/**
 * Apply the runtime's shared tables (outbox, idempotency keys, processed events) and then a
 * service's own SQL migrations to its own schema. An advisory lock makes replicas that start
 * together wait for each other instead of racing.
 */
export async function migrate(opts: { databaseUrl: string; schema: string; dir: string; log: Logger }): Promise<void> {
  const shared = mkdtempSync(path.join(tmpdir(), 'loyalty-shared-migrations-'));
  try {
    for (const m of sharedMigrations)
      writeFileSync(
        path.join(shared, `${m.name}${m.noTransaction ? NO_TRANSACTION_SUFFIX : '.sql'}`),
        `-- Up Migration\n${m.sql}`,
      );
    await applyMigrations(opts, shared, 'runtime_migrations');
  } finally {
    rmSync(shared, { recursive: true, force: true });
  }
  await applyMigrations(opts, opts.dir, 'migrations');
}

interface MigrationRun {
  opts: { databaseUrl: string; schema: string; log: Logger };
  dir: string;
  table: string;
  db: pg.Client;
  /** The no-transaction migrations' own record: `<table>_no_transaction`. */
  tracker: string;
}

/**
 * Apply a folder's pending migrations in name order. Ordinary ones go through node-pg-migrate in
 * one transaction per run, recorded in `<table>`; a no-transaction one (`*.no-transaction.sql`) is
 * run here between them, statement by statement, and recorded in `<table>_no_transaction` (node-pg-migrate
 * ignores those files, so its order check still holds). A migration converted to no-transaction
 * after it was applied the ordinary way keeps counting as applied (its record is moved over).
 */
async function applyMigrations(
  opts: { databaseUrl: string; schema: string; log: Logger },
  dir: string,
  table: string,
): Promise<void> {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.sql') && !f.startsWith('.'))
    .sort((a, b) => (migrationName(a) < migrationName(b) ? -1 : 1));
  const db = new pg.Client({ connectionString: opts.databaseUrl, application_name: 'migrate' });
  await db.connect();
  const lockKey = `loyalty-migrate:${opts.schema}.${table}`;
  try {
    await db.query(`SELECT pg_advisory_lock(hashtextextended($1, 0))`, [lockKey]);
    const run: MigrationRun = { opts, dir, table, db, tracker: `${table}_no_transaction` };
    const applied: string[] = [];
    if (files.some((f) => f.endsWith(NO_TRANSACTION_SUFFIX))) await adoptConverted(run, files);
    const done = await recorded(run);
    const pendingOrdinary = files.filter((f) => !f.endsWith(NO_TRANSACTION_SUFFIX) && !done.has(migrationName(f)));
    for (const file of files.filter((f) => f.endsWith(NO_TRANSACTION_SUFFIX))) {
      const name = migrationName(file);
      if (done.has(name)) continue;
      const before = pendingOrdinary.filter((f) => migrationName(f) < name);
      if (before.length > 0) applied.push(...(await runOrdinary(run, before.length)));
      pendingOrdinary.splice(0, before.length);
      await runOutsideTransaction(run, file);
      applied.push(name);
    }
    if (pendingOrdinary.length > 0) applied.push(...(await runOrdinary(run, Infinity)));
    if (applied.length > 0) opts.log.info({ schema: opts.schema, applied }, 'migrations applied');
  } finally {
    await db.query(`SELECT pg_advisory_unlock(hashtextextended($1, 0))`, [lockKey]).catch(() => undefined);
    await db.end();
  }
}

/** Ordinary migrations: the next `count` pending ones, through node-pg-migrate, in one transaction. */
async function runOrdinary(run: MigrationRun, count: number): Promise<string[]> {
  // Loaded only when there is an ordinary migration to apply: node-pg-migrate brings jiti, glob and
  // their sources (some 10 MB of resident memory) into a process that keeps them for good, and a
  // service started without migrating, or with none pending, never needs them.
  const { runner } = await import('node-pg-migrate');
  const done = await runner({
    databaseUrl: run.opts.databaseUrl,
    schema: run.opts.schema,
    createSchema: true,
    migrationsSchema: run.opts.schema,
    migrationsTable: run.table,
    dir: run.dir,
    ignorePattern: `(\\..*)|(.*${NO_TRANSACTION_SUFFIX.replace(/\./g, '\\.')})`,
    direction: 'up',
    count,
    checkOrder: true,
    singleTransaction: true,
    advisoryLockMode: 'wait',
    log: () => undefined,
  });
  return done.map((m) => m.name);
}

const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;

async function ensureTracker(run: MigrationRun): Promise<string> {
  const { schema } = run.opts;
  await run.db.query(`CREATE SCHEMA IF NOT EXISTS ${ident(schema)}`);
  const tracker = `${ident(schema)}.${ident(run.tracker)}`;
  await run.db.query(
    `CREATE TABLE IF NOT EXISTS ${tracker} (name text PRIMARY KEY, run_on timestamptz NOT NULL DEFAULT now())`,
  );
  return tracker;
}

/** Names applied so far: node-pg-migrate's record and the no-transaction one. */
async function recorded(run: MigrationRun): Promise<Set<string>> {
  const tracker = await ensureTracker(run);
  const names = new Set((await run.db.query<{ name: string }>(`SELECT name FROM ${tracker}`)).rows.map((r) => r.name));
  const exists = await run.db.query(`SELECT to_regclass($1) IS NOT NULL AS ok`, [
    `${ident(run.opts.schema)}.${ident(run.table)}`,
  ]);
  if (exists.rows[0]?.ok === true) {
    const { rows } = await run.db.query<{ name: string }>(
      `SELECT name FROM ${ident(run.opts.schema)}.${ident(run.table)}`,
    );
    for (const r of rows) names.add(r.name);
  }
  return names;
}

/** No-transaction migrations node-pg-migrate applied before they were converted: their record moves over. */
async function adoptConverted(run: MigrationRun, files: string[]): Promise<void> {
  const tracker = await ensureTracker(run);
  const table = `${ident(run.opts.schema)}.${ident(run.table)}`;
  const exists = await run.db.query(`SELECT to_regclass($1) IS NOT NULL AS ok`, [table]);
  if (exists.rows[0]?.ok !== true) return;
  const names = files.filter((f) => f.endsWith(NO_TRANSACTION_SUFFIX)).map(migrationName);
  await run.db.query('BEGIN');
  try {
    await run.db.query(
      `INSERT INTO ${tracker} (name, run_on) SELECT name, run_on FROM ${table} WHERE name = ANY($1::text[])
       ON CONFLICT (name) DO NOTHING`,
      [names],
    );
    await run.db.query(`DELETE FROM ${table} WHERE name = ANY($1::text[])`, [names]);
    await run.db.query('COMMIT');
  } catch (err) {
    await run.db.query('ROLLBACK');
    throw err;
  }
}

/**
 * One no-transaction migration: each statement on its own (autocommit), in the schema. An index
 * left invalid by an interrupted CREATE INDEX CONCURRENTLY is dropped first and built again
 * (`IF NOT EXISTS` alone would keep the invalid one). Recorded once every statement succeeded; a
 * failure part-way runs the whole migration again next time, so its statements are idempotent.
 */
async function runOutsideTransaction(run: MigrationRun, file: string): Promise<void> {
  const { db } = run;
  const schema = run.opts.schema;
  await db.query(`SET search_path TO ${ident(schema)}`);
  try {
    for (const statement of upStatements(readFileSync(path.join(run.dir, file), 'utf8'))) {
      const index = CONCURRENT_INDEX.exec(statement)?.[1];
      if (index) {
        const { rows } = await db.query<{ valid: boolean }>(
          `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
             JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`,
          [schema, index],
        );
        if (rows[0]?.valid === false) await db.query(`DROP INDEX CONCURRENTLY ${ident(schema)}.${ident(index)}`);
      }
      await db.query(statement);
    }
  } finally {
    await db.query('RESET search_path');
  }
  await db.query(`INSERT INTO ${await ensureTracker(run)} (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, [
    migrationName(file),
  ]);
}
