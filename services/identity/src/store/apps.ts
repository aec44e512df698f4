import { returnedRow } from '@loyalty/runtime';
import type { Scope } from '@loyalty/contracts';
import type { Queryable } from '@loyalty/runtime';

export interface App {
  app_id: string;
  tenant_id: number;
  name: string;
  scopes: Scope[];
  created_at: string;
  revoked_at: string | null;
}

export interface AppCredentials {
  tenant_id: number;
  sandbox: boolean;
  scopes: Scope[];
  key_hash: Buffer;
  revoked: boolean;
  /** The operator deactivated the tenant: its apps are refused (403 tenant_inactive). */
  tenant_inactive: boolean;
}

const iso = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const cols = `id AS app_id, tenant_id, name, scopes, ${iso('created_at')} AS created_at, ${iso('revoked_at')} AS revoked_at`;

export async function createApp(
  db: Queryable,
  a: { id: string; tenantId: number; name: string; scopes: Scope[]; keyHash: Buffer },
): Promise<App> {
  const { rows } = await db.query<App>(
    `INSERT INTO identity.apps (id, tenant_id, name, scopes, key_hash) VALUES ($1, $2, $3, $4, $5) RETURNING ${cols}`,
    [a.id, a.tenantId, a.name, a.scopes, a.keyHash],
  );
  return returnedRow(rows, 'insert app');
}

export async function listApps(db: Queryable, tenantId: number): Promise<App[]> {
  return (
    await db.query<App>(`SELECT ${cols} FROM identity.apps WHERE tenant_id = $1 ORDER BY created_at, id`, [tenantId])
  ).rows;
}

/** Replace the key of an app that is not revoked; the old key stops working with this commit. */
export async function rotateKey(db: Queryable, id: string, keyHash: Buffer): Promise<App | undefined> {
  const { rows } = await db.query<App>(
    `UPDATE identity.apps SET key_hash = $2, key_rotated_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING ${cols}`,
    [id, keyHash],
  );
  return rows[0];
}

export async function revokeApp(db: Queryable, id: string): Promise<App | undefined> {
  const { rows } = await db.query<App>(
    `UPDATE identity.apps SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 RETURNING ${cols}`,
    [id],
  );
  return rows[0];
}

export async function findCredentials(db: Queryable, appId: string): Promise<AppCredentials | undefined> {
  const { rows } = await db.query<AppCredentials>(
    `SELECT a.tenant_id, t.sandbox, a.scopes, a.key_hash, a.revoked_at IS NOT NULL AS revoked,
            t.deactivated_at IS NOT NULL AS tenant_inactive
       FROM identity.apps a JOIN identity.tenants t ON t.id = a.tenant_id WHERE a.id = $1`,
    [appId],
  );
  return rows[0];
}
