import {
  afterCommit,
  PeriodicTask,
  withTransaction,
  type Clock,
  type Logger,
  type Metrics,
  type Pool,
  type Queryable,
} from '@loyalty/runtime';
import { isSealed, newDataKey, open, seal, unwrapDataKey, wrapDataKey, type MasterKey } from './domain/envelope.ts';
import {
  findTenantKey,
  insertTenantKey,
  keysToRewrap,
  plaintextReplays,
  plaintextSecrets,
  rewrapTenantKey,
  secretsBacklog,
  storeSealedReplay,
  storeSealedSecrets,
} from './store/tenant-keys.ts';

/** Data keys a replica keeps unwrapped in memory (one per tenant with endpoints). */
const MAX_CACHED_KEYS = 10_000;
/** Rows sealed or rewrapped per transaction. */
const BATCH = 100;

/**
 * The tenants' signing secrets at rest (envelope encryption, domain/envelope.ts): `seal` before a
 * secret is stored, `open` after it is read. A tenant's data key is made on first use, in the
 * caller's transaction, and kept unwrapped in memory only once that transaction committed (so a
 * key that was rolled back is never used). `current` wraps new and rewrapped keys; `previous`
 * (SECRETS_KEY_PREVIOUS) is only read, while a rotation rewraps what it wrapped.
 */
export class SecretBox {
  private readonly keys = new Map<number, Buffer>();
  private readonly masters: MasterKey[];

  constructor(
    private readonly current: MasterKey,
    previous: MasterKey | undefined,
  ) {
    this.masters = previous && previous.id !== current.id ? [current, previous] : [current];
  }

  get currentKeyId(): string {
    return this.current.id;
  }

  /** The tenant's data key; made and stored (wrapped) in `db`'s transaction when it has none. */
  private async dataKey(db: Queryable, tenantId: number): Promise<Buffer> {
    const cached = this.keys.get(tenantId);
    if (cached) return cached;
    let row = await findTenantKey(db, tenantId);
    if (!row) {
      const fresh = newDataKey(this.current, tenantId);
      // Two first secrets of one tenant at once: the second waits for the first's commit and reads its key.
      if (!(await insertTenantKey(db, tenantId, fresh.wrapped, this.current.id)))
        row = await findTenantKey(db, tenantId);
      else row = { tenant_id: tenantId, wrapped_key: fresh.wrapped };
    }
    if (!row) throw new Error(`tenant ${tenantId} has no data key`);
    const key = unwrapDataKey(this.masters, tenantId, row.wrapped_key);
    afterCommit(db, () => {
      if (this.keys.size >= MAX_CACHED_KEYS) this.keys.clear();
      this.keys.set(tenantId, key);
    });
    return key;
  }

  /** A secret as it is stored: sealed under the tenant's data key. */
  async seal(db: Queryable, tenantId: number, plaintext: string): Promise<string> {
    return seal(await this.dataKey(db, tenantId), tenantId, plaintext);
  }

  /** A stored secret in plaintext (a value stored before encryption is answered as it is). */
  async open(db: Queryable, tenantId: number, stored: string): Promise<string> {
    if (!isSealed(stored)) return stored;
    return open(await this.dataKey(db, tenantId), tenantId, stored);
  }

  /** Rewrap up to a batch of data keys another key wrapped (a rotation of SECRETS_KEY): how many. */
  async rewrapBatch(pool: Pool, now: Date): Promise<number> {
    return withTransaction(pool, async (db) => {
      const rows = await keysToRewrap(db, this.current.id, BATCH);
      for (const r of rows) {
        const key = unwrapDataKey(this.masters, r.tenant_id, r.wrapped_key);
        await rewrapTenantKey(db, r.tenant_id, wrapDataKey(this.current, r.tenant_id, key), this.current.id, now);
      }
      return rows.length;
    });
  }

  /** Seal up to a batch of secrets (and stored answers holding one) kept in plaintext from before: how many. */
  async sealBatch(pool: Pool): Promise<number> {
    return withTransaction(pool, async (db) => {
      const endpoints = await plaintextSecrets(db, BATCH);
      for (const e of endpoints) {
        const sealOf = async (s: string | null) => (s === null || isSealed(s) ? s : this.seal(db, e.tenant_id, s));
        await storeSealedSecrets(db, e.id, (await sealOf(e.secret)) ?? e.secret, await sealOf(e.previous_secret));
      }
      const replays = await plaintextReplays(db, BATCH);
      for (const r of replays)
        await storeSealedReplay(db, r.tenant_id, r.key, await this.seal(db, r.tenant_id, r.response));
      return endpoints.length + replays.length;
    });
  }
}

/**
 * Keeps the secrets at rest under the current key, in every replica (rows locked with SKIP
 * LOCKED): at start and then every `intervalMs`, seals what is still in plaintext and rewraps the
 * data keys a previous SECRETS_KEY wrapped. `loyalty_webhook_secrets_pending` counts what is left:
 * once it is 0 after a rotation, SECRETS_KEY_PREVIOUS can be removed.
 */
export class SecretsKeeper {
  private readonly task: PeriodicTask<number>;
  private announced = false;

  constructor(
    private readonly o: {
      box: SecretBox;
      pool: Pool;
      clock: Clock;
      log: Logger;
      metrics?: Metrics;
      intervalMs: number;
    },
  ) {
    this.task = new PeriodicTask({
      name: 'secrets-keeper',
      intervalMs: o.intervalMs,
      log: o.log,
      run: () => this.pass(),
      more: (n) => n > 0,
    });
    o.metrics?.gauge(
      'loyalty_webhook_secrets_pending',
      'Webhook secrets in plaintext and tenant data keys not yet under the current SECRETS_KEY',
      () => secretsBacklog(o.pool, o.box.currentKeyId),
    );
  }

  start(): void {
    this.task.start();
    this.task.wake();
  }

  stop(): Promise<void> {
    return this.task.stop();
  }

  /** Seal and rewrap everything now (tests, and the operator's `hooks`): rows handled. */
  async runNow(): Promise<number> {
    let total = 0;
    for (let n = await this.task.runNow(); n > 0; n = await this.task.runNow()) total += n;
    return total;
  }

  private async pass(): Promise<number> {
    const sealed = await this.o.box.sealBatch(this.o.pool);
    const rewrapped = await this.o.box.rewrapBatch(this.o.pool, this.o.clock.now());
    if (sealed + rewrapped > 0) {
      this.o.log.info({ sealed, rewrapped, key_id: this.o.box.currentKeyId }, 'webhook secrets sealed or rewrapped');
      this.announced = false;
    } else if (!this.announced) {
      this.o.log.info({ key_id: this.o.box.currentKeyId }, 'every webhook secret is under the current SECRETS_KEY');
      this.announced = true;
    }
    return sealed + rewrapped;
  }
}
