import { returnedRow } from '@loyalty/runtime';
import type { KeyObject } from 'node:crypto';
import type { Queryable } from '@loyalty/runtime';
import { signingKey } from '../domain/signature.ts';

/**
 * A webhook endpoint as stored. `secret` and `previous_secret` are sealed under the tenant's data
 * key (secret-box.ts); only the signer opens them.
 */
export interface EndpointRow {
  id: number;
  tenant_id: number;
  url: string;
  description: string | null;
  event_types: string[];
  enabled: boolean;
  disabled_reason: 'manual' | 'failing' | null;
  disabled_at: Date | null;
  failing_since: Date | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  secret_rotated_at: Date | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

const T = 'webhooks.endpoints';

/** A live (not deleted) endpoint of the tenant; another tenant's answers like a missing one. */
export async function findEndpoint(
  db: Queryable,
  tenantId: number,
  id: number,
  lock = false,
): Promise<EndpointRow | undefined> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT * FROM ${T} WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL${lock ? ' FOR UPDATE' : ''}`,
    [tenantId, id],
  );
  return rows[0];
}

export async function listEndpoints(db: Queryable, tenantId: number): Promise<EndpointRow[]> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT * FROM ${T} WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY id`,
    [tenantId],
  );
  return rows;
}

export async function countEndpoints(db: Queryable, tenantId: number): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${T} WHERE tenant_id = $1 AND deleted_at IS NULL`,
    [tenantId],
  );
  return returnedRow(rows, 'a count').n;
}

export async function insertEndpoint(
  db: Queryable,
  e: { tenantId: number; url: string; description: string | null; eventTypes: string[]; secret: string; now: Date },
): Promise<EndpointRow> {
  const { rows } = await db.query<EndpointRow>(
    `INSERT INTO ${T} (tenant_id, url, description, event_types, secret, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING *`,
    [e.tenantId, e.url, e.description, e.eventTypes, e.secret, e.now],
  );
  return returnedRow(rows, 'the inserted endpoint');
}

/** Change what PATCH names; `enabled` false disables by hand, true enables; enabling or a new URL forgets the failures. */
export async function updateEndpoint(
  db: Queryable,
  tenantId: number,
  id: number,
  c: { url?: string; description?: string | null; eventTypes?: string[]; enabled?: boolean; now: Date },
): Promise<EndpointRow | undefined> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE ${T} SET
       url = coalesce($3, url),
       description = CASE WHEN $4::boolean THEN $5 ELSE description END,
       event_types = coalesce($6, event_types),
       enabled = coalesce($7, enabled),
       disabled_reason = CASE WHEN $7 IS NULL THEN disabled_reason WHEN $7 THEN NULL WHEN enabled THEN 'manual' ELSE disabled_reason END,
       disabled_at = CASE WHEN $7 IS NULL THEN disabled_at WHEN $7 THEN NULL WHEN enabled THEN $8 ELSE disabled_at END,
       -- Enabled again, or pointed elsewhere: a new start for the three days of failures.
       failing_since = CASE WHEN ($7 AND NOT enabled) OR $3 <> url THEN NULL ELSE failing_since END,
       updated_at = $8
     WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING *`,
    [
      tenantId,
      id,
      c.url ?? null,
      c.description !== undefined,
      c.description ?? null,
      c.eventTypes ?? null,
      c.enabled ?? null,
      c.now,
    ],
  );
  return rows[0];
}

export async function deleteEndpoint(db: Queryable, tenantId: number, id: number, now: Date): Promise<boolean> {
  const r = await db.query(
    `UPDATE ${T} SET deleted_at = $3, enabled = false, updated_at = $3 WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL`,
    [tenantId, id, now],
  );
  return (r.rowCount ?? 0) > 0;
}

/** A new secret (sealed); the current one becomes the previous one and keeps signing until `previousUntil`. */
export async function rotateSecret(
  db: Queryable,
  tenantId: number,
  id: number,
  secret: string,
  now: Date,
  previousUntil: Date,
): Promise<EndpointRow | undefined> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE ${T} SET previous_secret = secret, previous_secret_expires_at = $4, secret = $3, secret_rotated_at = $5, updated_at = $5
     WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING *`,
    [tenantId, id, secret, previousUntil, now],
  );
  return rows[0];
}

/** What the intake needs to route events: the enabled endpoints of these tenants. */
export interface Route {
  id: number;
  tenant_id: number;
  event_types: string[];
  created_at: Date;
}

export async function routesOf(db: Queryable, tenantIds: number[]): Promise<Route[]> {
  const { rows } = await db.query<Route>(
    `SELECT id, tenant_id, event_types, created_at FROM ${T}
      WHERE tenant_id = ANY($1::bigint[]) AND enabled AND deleted_at IS NULL
        AND tenant_id NOT IN (SELECT tenant_id FROM webhooks.tenant_states WHERE paused)`,
    [tenantIds],
  );
  return rows;
}

/** What a sender needs of an endpoint: where, and the secrets that sign. */
export interface Target {
  id: number;
  tenant_id: number;
  url: string;
  secret: KeyObject;
  /** The secret before the last rotation, signing too until `until`. */
  previous: { secret: KeyObject; until: Date } | null;
  /** false: disabled or deleted; nothing more is sent to it. */
  live: boolean;
}

/** What a sender needs of an endpoint, with its secrets opened (`open`: secret-box.ts). */
export async function targetOf(e: EndpointRow, open: (stored: string) => Promise<string>): Promise<Target> {
  return {
    id: e.id,
    tenant_id: e.tenant_id,
    url: e.url,
    secret: signingKey(await open(e.secret)),
    previous:
      e.previous_secret && e.previous_secret_expires_at
        ? { secret: signingKey(await open(e.previous_secret)), until: e.previous_secret_expires_at }
        : null,
    live: e.enabled && e.deleted_at === null,
  };
}

/** The secrets that sign at `now`: the current one, and the previous one during the rotation's overlap. */
export function signingSecrets(t: Target, now: Date): KeyObject[] {
  return t.previous && t.previous.until.getTime() > now.getTime() ? [t.secret, t.previous.secret] : [t.secret];
}

export async function endpointsByIds(db: Queryable, ids: number[]): Promise<EndpointRow[]> {
  const { rows } = await db.query<EndpointRow>(`SELECT * FROM ${T} WHERE id = ANY($1::bigint[])`, [ids]);
  return rows;
}

/**
 * Endpoints that failed every attempt for `window` up to `now`, disabled in the caller's
 * transaction (rows another replica's sweep holds are skipped). Each with its last error.
 */
export async function disableFailing(
  db: Queryable,
  now: Date,
  windowMs: number,
  limit: number,
): Promise<(EndpointRow & { last_error: string | null })[]> {
  const { rows } = await db.query<EndpointRow & { last_error: string | null }>(
    `WITH due AS (
       SELECT id FROM ${T}
        WHERE enabled AND deleted_at IS NULL AND failing_since <= $1::timestamptz - make_interval(secs => $2::float8 / 1000)
        ORDER BY failing_since LIMIT $3 FOR UPDATE SKIP LOCKED
     ), disabled AS (
       UPDATE ${T} e SET enabled = false, disabled_reason = 'failing', disabled_at = $1, updated_at = $1
         FROM due WHERE e.id = due.id RETURNING e.*
     )
     SELECT d.*, (SELECT last_error FROM webhooks.deliveries x WHERE x.endpoint_id = d.id AND x.last_error IS NOT NULL
                   ORDER BY x.id DESC LIMIT 1) AS last_error
       FROM disabled d`,
    [now, windowMs, limit],
  );
  return rows;
}
