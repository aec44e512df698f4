import type { Queryable } from '@loyalty/runtime';

/** A tenant's data key as stored: wrapped under the key-encryption key `key_id`. */
export interface TenantKeyRow {
  tenant_id: number;
  wrapped_key: string;
}

export async function findTenantKey(db: Queryable, tenantId: number): Promise<TenantKeyRow | undefined> {
  const { rows } = await db.query<TenantKeyRow>(
    `SELECT tenant_id, wrapped_key FROM webhooks.tenant_keys WHERE tenant_id = $1`,
    [tenantId],
  );
  return rows[0];
}

/** Store a tenant's first data key; a key stored meanwhile by another transaction wins (false). */
export async function insertTenantKey(
  db: Queryable,
  tenantId: number,
  wrapped: string,
  keyId: string,
): Promise<boolean> {
  const r = await db.query(
    `INSERT INTO webhooks.tenant_keys (tenant_id, wrapped_key, key_id) VALUES ($1, $2, $3) ON CONFLICT (tenant_id) DO NOTHING`,
    [tenantId, wrapped, keyId],
  );
  return (r.rowCount ?? 0) > 0;
}

/** Data keys not wrapped by `keyId` (a rotation in progress), locked for rewrapping; other replicas skip them. */
export async function keysToRewrap(db: Queryable, keyId: string, limit: number): Promise<TenantKeyRow[]> {
  const { rows } = await db.query<TenantKeyRow>(
    `SELECT tenant_id, wrapped_key FROM webhooks.tenant_keys WHERE key_id <> $1
      ORDER BY tenant_id LIMIT $2 FOR UPDATE SKIP LOCKED`,
    [keyId, limit],
  );
  return rows;
}

export async function rewrapTenantKey(
  db: Queryable,
  tenantId: number,
  wrapped: string,
  keyId: string,
  now: Date,
): Promise<void> {
  await db.query(
    `UPDATE webhooks.tenant_keys SET wrapped_key = $2, key_id = $3, rewrapped_at = $4 WHERE tenant_id = $1`,
    [tenantId, wrapped, keyId, now],
  );
}

/** Endpoints with a secret stored before encryption (not `s1.`), locked for sealing. */
export async function plaintextSecrets(
  db: Queryable,
  limit: number,
): Promise<{ id: number; tenant_id: number; secret: string; previous_secret: string | null }[]> {
  const { rows } = await db.query<{ id: number; tenant_id: number; secret: string; previous_secret: string | null }>(
    `SELECT id, tenant_id, secret, previous_secret FROM webhooks.endpoints
      WHERE secret NOT LIKE 's1.%' OR previous_secret NOT LIKE 's1.%'
      ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [limit],
  );
  return rows;
}

export async function storeSealedSecrets(
  db: Queryable,
  id: number,
  secret: string,
  previousSecret: string | null,
): Promise<void> {
  await db.query(`UPDATE webhooks.endpoints SET secret = $2, previous_secret = $3 WHERE id = $1`, [
    id,
    secret,
    previousSecret,
  ]);
}

/**
 * Stored answers of endpoint creations and rotations from before encryption: they hold a secret
 * in plaintext (`"secret":"whsec_`), locked for sealing.
 */
export async function plaintextReplays(
  db: Queryable,
  limit: number,
): Promise<{ tenant_id: number; key: string; response: string }[]> {
  const { rows } = await db.query<{ tenant_id: number; key: string; response: string }>(
    `SELECT tenant_id, key, response FROM webhooks.idempotency_keys
      WHERE response LIKE '{%"secret":"whsec\\_%' ORDER BY tenant_id, key LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [limit],
  );
  return rows;
}

export async function storeSealedReplay(db: Queryable, tenantId: number, key: string, response: string): Promise<void> {
  await db.query(`UPDATE webhooks.idempotency_keys SET response = $3 WHERE tenant_id = $1 AND key = $2`, [
    tenantId,
    key,
    response,
  ]);
}

/** What still waits for the current key: data keys under another key, secrets in plaintext. */
export async function secretsBacklog(db: Queryable, keyId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM webhooks.tenant_keys WHERE key_id <> $1)::int
          + (SELECT count(*) FROM webhooks.endpoints WHERE secret NOT LIKE 's1.%' OR previous_secret NOT LIKE 's1.%')::int AS n`,
    [keyId],
  );
  return rows[0]?.n ?? 0;
}
