import { createHash } from 'node:crypto';
import { AppError } from '@loyalty/contracts';
import { withTransaction, type Pool, type PoolClient, type Queryable } from './db.ts';

/** Stable JSON (sorted keys) so that the same parameters always hash the same. */
export function stableStringify(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  const entries = Object.entries(value)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
}

export function requestHash(operation: string, data: unknown): string {
  return createHash('sha256').update(operation).update('\0').update(stableStringify(data)).digest('hex');
}

const REPLAYED = Symbol('replayed');

/** Whether a value is a stored response replayed by a `ReplayStore` (the reply says so: `Idempotent-Replayed`). */
export function isReplay(value: unknown): boolean {
  return typeof value === 'object' && value !== null && REPLAYED in value;
}

/** A stored response as the first request answered it (same keys in the same order), marked as a replay. */
function replayed<T>(text: string): T {
  // eslint-disable-next-line @typescript-eslint/consistent-type-assertions -- the stored text is the handler's own earlier answer of type T
  const value = JSON.parse(text) as T;
  if (typeof value === 'object' && value !== null) Object.defineProperty(value, REPLAYED, { value: true });
  return value;
}

export interface ReplayKey {
  tenantId: number;
  /** The Idempotency-Key (HTTP clients) or a saga step's deterministic key. */
  key: string;
  /** The operation: the same key on another operation is refused. */
  operation: string;
  /** The request's parameters: the same key with other parameters is refused. */
  data: unknown;
}

/**
 * Idempotency-Key records of one service (its `<schema>.idempotency_keys`, defined by the
 * runtime's shared migrations), Stripe style: the key, a hash of the operation and its parameters,
 * and the response. A retry with the same key and parameters replays the stored response and
 * changes nothing; the same key with other parameters or on another operation is refused (409).
 *
 * - `run`: the whole operation in one transaction with its record (the usual case);
 * - `find` + `save`: an operation that spans several transactions (a call to another service
 *   between two commits) looks its key up first and stores its response in its last transaction;
 * - `steps` + `save`: the same, with the key held while the steps run, for an operation whose
 *   retry must not start its steps a second time while the first attempt is still running.
 */
/**
 * How a store keeps its answers at rest when they hold a secret (a webhook endpoint's signing
 * secret): `seal` before a response is stored, `open` after it is read, in the caller's
 * transaction. A stored value `open` does not recognise is answered as it is.
 */
export interface ResponseSealer {
  seal(db: Queryable, tenantId: number, text: string): Promise<string>;
  open(db: Queryable, tenantId: number, stored: string): Promise<string>;
}

const asIs: ResponseSealer = { seal: async (_db, _t, text) => text, open: async (_db, _t, stored) => stored };

export class ReplayStore {
  private readonly table: string;

  constructor(
    private readonly pool: Pool,
    schema: string,
    private readonly sealer: ResponseSealer = asIs,
  ) {
    this.table = `${schema}.idempotency_keys`;
  }

  /**
   * Run `fn` in one transaction with the key's record: two concurrent requests with one key
   * serialize on it and the second replays; a failure stores nothing, so a retry runs again.
   * Without a key, `fn` simply runs in a transaction.
   */
  async run<T>(
    k: Omit<ReplayKey, 'key'> & { key: string | undefined },
    fn: (db: PoolClient) => Promise<T>,
  ): Promise<T> {
    if (!k.key) return withTransaction(this.pool, fn);
    const key = { ...k, key: k.key };
    const hash = requestHash(k.operation, k.data);
    return withTransaction(this.pool, async (db) => {
      const inserted = await db.query(
        `INSERT INTO ${this.table} (tenant_id, key, request_hash) VALUES ($1, $2, $3)
         ON CONFLICT (tenant_id, key) DO NOTHING RETURNING key`,
        [k.tenantId, k.key, hash],
      );
      if (inserted.rowCount === 0) {
        const stored = await this.find<T>(key, db);
        if (stored === undefined) throw new AppError('idempotency_in_progress');
        return stored;
      }
      const result = await fn(db);
      await db.query(`UPDATE ${this.table} SET response = $3 WHERE tenant_id = $1 AND key = $2`, [
        k.tenantId,
        k.key,
        await this.sealer.seal(db, k.tenantId, JSON.stringify(result)),
      ]);
      return result;
    });
  }

  /**
   * The stored response of this key, or undefined when there is none yet. Throws 409
   * `idempotency_key_reused` for other parameters, `idempotency_in_progress` while the first
   * request still holds the key.
   */
  async find<T>(k: ReplayKey, db: Queryable = this.pool): Promise<T | undefined> {
    const { rows } = await db.query<{ request_hash: string; response: string | null }>(
      `SELECT request_hash, response FROM ${this.table} WHERE tenant_id = $1 AND key = $2`,
      [k.tenantId, k.key],
    );
    const row = rows[0];
    if (!row) return undefined;
    if (row.request_hash !== requestHash(k.operation, k.data)) throw new AppError('idempotency_key_reused');
    if (row.response === null) throw new AppError('idempotency_in_progress');
    return replayed<T>(await this.sealer.open(db, k.tenantId, row.response));
  }

  /**
   * Store the response in the caller's transaction (completing a key held by `steps`); a key
   * answered meanwhile keeps its first response.
   */
  async save(db: Queryable, k: ReplayKey, response: unknown): Promise<void> {
    await db.query(
      `INSERT INTO ${this.table} AS k (tenant_id, key, request_hash, response) VALUES ($1, $2, $3, $4)
       ON CONFLICT (tenant_id, key) DO UPDATE SET response = EXCLUDED.response
       WHERE k.response IS NULL AND k.request_hash = EXCLUDED.request_hash`,
      [
        k.tenantId,
        k.key,
        requestHash(k.operation, k.data),
        await this.sealer.seal(db, k.tenantId, JSON.stringify(response)),
      ],
    );
  }

  /**
   * An operation of several steps (calls to other services between commits) under one key: the
   * key is recorded as in progress (committed) before the first step, so a retry arriving while
   * the first attempt runs is answered 409 `idempotency_in_progress` (which clients retry) instead
   * of starting the steps again; `fn`'s last transaction stores the response with `save`. A failure
   * forgets the key, so a retry runs again. An attempt that died without either (a crashed
   * process) leaves its key in progress for `leaseMs`, after which a retry takes the key over.
   * Without a key, `fn` simply runs.
   */
  async steps<T>(k: ReplayKey | undefined, fn: () => Promise<T>, leaseMs = 30_000): Promise<T> {
    if (!k) return fn();
    const replay = await this.begin<T>(k, leaseMs);
    if (replay.answered) return replay.response;
    try {
      return await fn();
    } catch (err) {
      await this.pool
        .query(`DELETE FROM ${this.table} WHERE tenant_id = $1 AND key = $2 AND response IS NULL`, [k.tenantId, k.key])
        .catch(() => undefined); // left in progress: the lease lets a retry take it over
      throw err;
    }
  }

  /** Hold the key for a new attempt, or the stored answer (and the refusals of `find`). */
  private async begin<T>(
    k: ReplayKey,
    leaseMs: number,
  ): Promise<{ answered: true; response: T } | { answered: false }> {
    const hash = requestHash(k.operation, k.data);
    // A new key, or one whose attempt stopped answering for the lease (its start moves to now).
    const held = await this.pool.query(
      `INSERT INTO ${this.table} AS k (tenant_id, key, request_hash) VALUES ($1, $2, $3)
       ON CONFLICT (tenant_id, key) DO UPDATE SET created_at = now()
       WHERE k.response IS NULL AND k.request_hash = EXCLUDED.request_hash
         AND k.created_at < now() - make_interval(secs => $4::double precision / 1000)
       RETURNING key`,
      [k.tenantId, k.key, hash, leaseMs],
    );
    if (held.rowCount === 1) return { answered: false };
    const stored = await this.find<T>(k);
    if (stored === undefined) return this.begin(k, leaseMs); // forgotten meanwhile by a failed attempt
    return { answered: true, response: stored };
  }
}
