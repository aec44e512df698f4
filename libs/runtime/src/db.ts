import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { runner } from 'node-pg-migrate';
import type { Logger } from './logger.ts';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'>;

// int8 (bigint) columns hold money in minor units and ids; they fit in a JS number up to 2^53,
// which the schema's checks keep them under. count(*) is int8 too.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

/**
 * A pool that survives a Postgres restart: without an `error` listener an idle client's
 * connection error would crash the process. Queries fail meanwhile and succeed again after.
 */
export function createPool(url: string, max: number, log: Logger, applicationName: string): Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    application_name: applicationName,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  });
  pool.on('error', (err) => log.warn({ err: err.message }, 'idle postgres client failed; the pool replaces it'));
  // A client that is checked out (e.g. between two statements of a transaction) when the server
  // goes away emits 'error' on itself, not on the pool: without this listener the process dies.
  // Its next query fails, and the client is destroyed when released with that error.
  pool.on('connect', (client) => {
    client.on('error', (err) => log.warn({ err: err.message }, 'postgres connection lost'));
  });
  return pool;
}

/** Run `fn` in one transaction; commit when it resolves, roll back when it throws. */
export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let failure: unknown;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    failure = err;
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    // A connection-level failure destroys the client instead of returning it to the pool.
    client.release(failure !== undefined && isConnectionLost(failure) ? (failure as Error) : undefined);
  }
}

/** The connection itself failed (server restarting, network), as opposed to an SQL error. */
export function isConnectionLost(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return (
    (typeof e?.code === 'string' && /^(08|57P0)|^E[A-Z]+$/.test(e.code)) ||
    /Connection terminated|connection lost|not queryable/i.test(e?.message ?? '')
  );
}

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

/** Resolve a folder next to the calling module's package (works from src/ and from dist/). */
export function packageDir(importMetaUrl: string, relative: string): string {
  return fileURLToPath(new URL(relative, importMetaUrl));
}

/**
 * Apply a service's SQL migrations to its own schema. An advisory lock makes replicas that
 * start together wait for each other instead of racing.
 */
export async function migrate(opts: { databaseUrl: string; schema: string; dir: string; log: Logger }): Promise<void> {
  const applied = await runner({
    databaseUrl: opts.databaseUrl,
    schema: opts.schema,
    createSchema: true,
    migrationsSchema: opts.schema,
    migrationsTable: 'migrations',
    dir: opts.dir,
    direction: 'up',
    count: Infinity,
    checkOrder: true,
    singleTransaction: true,
    advisoryLockMode: 'wait',
    log: () => undefined,
  });
  if (applied.length > 0)
    opts.log.info({ schema: opts.schema, applied: applied.map((m) => m.name) }, 'migrations applied');
}
