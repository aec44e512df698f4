import {
  afterCommit,
  isSealed,
  newDataKey,
  openSecret,
  sealSecret,
  unwrapDataKey,
  withTransaction,
  wrapDataKey,
  type Logger,
  type MasterKey,
  type Pool,
  type Queryable,
} from '@loyalty/runtime';

/** Data keys a replica keeps unwrapped in memory. */
const MAX_CACHED_KEYS = 10_000;

/**
 * Tenants' SMTP passwords at rest, sealed like the webhooks service's signing secrets
 * (docs/decisions/secrets-at-rest.md, the envelope encryption of @loyalty/runtime): a data key per
 * tenant in `identity.tenant_keys`, wrapped under `SECRETS_KEY`; the password sealed under it and
 * bound to the tenant. Without SECRETS_KEY no password can be stored (`secrets_key_missing`).
 */
export class SmtpSecrets {
  private readonly keys = new Map<number, Buffer>();
  private readonly masters: MasterKey[];

  constructor(
    private readonly current: MasterKey | undefined,
    previous: MasterKey | undefined,
  ) {
    this.masters = [current, previous].filter((k): k is MasterKey => k !== undefined);
  }

  get available(): boolean {
    return this.current !== undefined;
  }

  private async dataKey(db: Queryable, tenantId: number): Promise<Buffer> {
    const cached = this.keys.get(tenantId);
    if (cached) return cached;
    const find = async () =>
      (
        await db.query<{ wrapped_key: string }>(`SELECT wrapped_key FROM identity.tenant_keys WHERE tenant_id = $1`, [
          tenantId,
        ])
      ).rows[0]?.wrapped_key;
    let wrapped = await find();
    if (wrapped === undefined) {
      if (!this.current) throw new Error('SECRETS_KEY is not set');
      const fresh = newDataKey(this.current, tenantId);
      const r = await db.query(
        `INSERT INTO identity.tenant_keys (tenant_id, wrapped_key, key_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
        [tenantId, fresh.wrapped, this.current.id],
      );
      wrapped = (r.rowCount ?? 0) > 0 ? fresh.wrapped : await find();
    }
    if (wrapped === undefined) throw new Error(`tenant ${tenantId} has no data key`);
    const key = unwrapDataKey(this.masters, tenantId, wrapped);
    afterCommit(db, () => {
      if (this.keys.size >= MAX_CACHED_KEYS) this.keys.clear();
      this.keys.set(tenantId, key);
    });
    return key;
  }

  async seal(db: Queryable, tenantId: number, password: string): Promise<string> {
    return sealSecret(await this.dataKey(db, tenantId), tenantId, password);
  }

  async open(db: Queryable, tenantId: number, stored: string): Promise<string> {
    if (!isSealed(stored)) return stored;
    return openSecret(await this.dataKey(db, tenantId), tenantId, stored);
  }

  /** Rewrap the data keys a previous SECRETS_KEY wrapped (a rotation), at start: rows rewrapped. */
  async rewrap(pool: Pool, log: Logger): Promise<number> {
    const current = this.current;
    if (!current) return 0;
    let done = 0;
    for (;;) {
      const n = await withTransaction(pool, async (db) => {
        const { rows } = await db.query<{ tenant_id: string; wrapped_key: string }>(
          `SELECT tenant_id, wrapped_key FROM identity.tenant_keys WHERE key_id <> $1
            ORDER BY tenant_id LIMIT 100 FOR UPDATE SKIP LOCKED`,
          [current.id],
        );
        for (const row of rows) {
          const tenantId = Number(row.tenant_id);
          const key = unwrapDataKey(this.masters, tenantId, row.wrapped_key);
          await db.query(
            `UPDATE identity.tenant_keys SET wrapped_key = $2, key_id = $3, rewrapped_at = now() WHERE tenant_id = $1`,
            [tenantId, wrapDataKey(current, tenantId, key), current.id],
          );
        }
        return rows.length;
      });
      done += n;
      if (n < 100) break;
    }
    if (done > 0) log.info({ rewrapped: done }, 'SMTP password data keys rewrapped under the current SECRETS_KEY');
    return done;
  }
}
