import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Logger } from './logger.ts';
import { openTransaction } from './open-transaction.ts';
import { failSpan, inSpan, recordingSpan, SpanKind, tracingOn } from './tracing.ts';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'>;

/**
 * An int8 (bigint) value as a JS number, refused unless exact. int8 columns hold money in minor
 * units, points and ids (count(*) is int8 too); a number is exact only up to 2^53 - 1, and the
 * schemas keep their values below that (the ledger caps every balance at 10^15, MAX_BALANCE in
 * services/ledger/src/domain/money.ts). Should one ever pass it, the query fails with this error
 * instead of answering a silently rounded amount.
 */
export function parseInt8(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n))
    throw new RangeError(`int8 value ${text} is outside the exact range of a JS number (±(2^53 - 1))`);
  return n;
}
pg.types.setTypeParser(pg.types.builtins.INT8, parseInt8);

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
    if (tracingOn()) traceQueries(client);
  });
  return pool;
}

/**
 * With tracing on, every statement a client runs inside a traced operation is a span (a child of
 * the operation's span) naming the statement, as the OpenTelemetry database conventions do. The
 * pg instrumentation package patches `pg` through a require hook that an ES module's import of it
 * does not pass through, so the client is wrapped here instead, where every pool is made.
 * Statements outside any traced operation (pollers, relays between batches) make no span.
 */
function traceQueries(client: pg.PoolClient): void {
  const original = client.query;
  const run = (args: unknown[]): unknown => Reflect.apply(original, client, args);
  const traced = (...args: unknown[]): unknown => {
    const text = statementText(args[0]);
    if (text === undefined || !recordingSpan()) return run(args);
    const statement = text.trim().slice(0, 1_000);
    const name = `pg ${statement.split(/\s+/, 1)[0]?.toUpperCase() ?? 'QUERY'}`;
    const attributes = { 'db.system.name': 'postgresql', 'db.query.text': statement };
    const at = args.findIndex((a) => typeof a === 'function');
    const done = args[at];
    if (typeof done !== 'function')
      return inSpan(name, { kind: SpanKind.CLIENT, attributes }, () => Promise.resolve(run(args)));
    // pg-pool's pool.query calls client.query with a callback.
    return inSpan(name, { kind: SpanKind.CLIENT, attributes }, (span) => {
      return new Promise<void>((resolve) => {
        args[at] = (err: unknown, res: unknown) => {
          if (err) failSpan(span, err instanceof Error ? err.message : String(err));
          resolve();
          Reflect.apply(done, undefined, [err, res]);
        };
        run(args);
      });
    });
  };
  Object.defineProperty(client, 'query', { value: traced, configurable: true, writable: true });
}

/** The SQL of a query's first argument; undefined for a submittable (a cursor, a COPY stream), left untraced. */
function statementText(first: unknown): string | undefined {
  if (typeof first === 'string') return first;
  if (typeof first !== 'object' || first === null) return undefined;
  if ('submit' in first && typeof first.submit === 'function') return undefined;
  return 'text' in first && typeof first.text === 'string' ? first.text : undefined;
}

/** Callbacks to run once the transaction of a client commits (see `afterCommit`). */
const pendingCommits = new WeakMap<Queryable, (() => void)[]>();

/**
 * Run `fn` in one transaction; commit when it resolves, roll back when it throws. Callbacks given
 * to `afterCommit` for its client run once the COMMIT has succeeded.
 */
export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  const committed: (() => void)[] = [];
  pendingCommits.set(client, committed);
  let failure: unknown;
  try {
    const body = async () => {
      await client.query('BEGIN');
      const r = await fn(client);
      await client.query('COMMIT');
      return r;
    };
    const result = openTransaction ? await openTransaction.run(true, body) : await body();
    pendingCommits.delete(client);
    for (const callback of committed) callback();
    return result;
  } catch (err) {
    failure = err;
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    pendingCommits.delete(client);
    // A connection-level failure destroys the client instead of returning it to the pool.
    client.release(failure instanceof Error && isConnectionLost(failure) ? failure : undefined);
  }
}

/**
 * Run `callback` once what `db` wrote is committed: after the COMMIT of the open transaction when
 * `db` is its client, at once otherwise (a statement on the pool commits by itself).
 */
export function afterCommit(db: Queryable, callback: () => void): void {
  const pending = pendingCommits.get(db);
  if (pending) pending.push(callback);
  else callback();
}

const LOST_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH']);
const LOST_MESSAGE =
  /Connection terminated|connection lost|not queryable|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|the database system is (starting up|shutting down)/i;

/**
 * The connection to PostgreSQL failed or the server is going away (restart, network), as opposed
 * to an error of the statement: a retryable 503 for the caller, and a client to destroy.
 */
export function isConnectionLost(err: unknown): boolean {
  const code = fieldOf(err, 'code');
  // 08: connection exceptions; 57P0x: the server is shutting down; 53300: too many connections.
  if (code !== undefined && (/^(08|57P0|53300)/.test(code) || LOST_CODES.has(code))) return true;
  return LOST_MESSAGE.test(fieldOf(err, 'message') ?? '');
}

/** A string field of a thrown value (pg errors carry `code`, `constraint`), if it has one. */
function fieldOf(err: unknown, field: string): string | undefined {
  if (typeof err !== 'object' || err === null || !(field in err)) return undefined;
  const value: unknown = Reflect.get(err, field);
  return typeof value === 'string' ? value : undefined;
}

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  return fieldOf(err, 'code') === '23505' && (constraint === undefined || fieldOf(err, 'constraint') === constraint);
}

/** Resolve a folder next to the calling module's package (works from src/ and from dist/). */
export function packageDir(importMetaUrl: string, relative: string): string {
  return fileURLToPath(new URL(relative, importMetaUrl));
}

/**
 * The row of a statement that always returns one: an INSERT ... RETURNING, an UPDATE of a row the
 * caller has just found or holds locked, an aggregate. None is a broken invariant of the service,
 * not an answer to the request, and is reported with what was asked.
 */
export function returnedRow<T>(rows: readonly T[], statement: string): T {
  const row = rows[0];
  if (row === undefined) throw new Error(`${statement} returned no row`);
  return row;
}
