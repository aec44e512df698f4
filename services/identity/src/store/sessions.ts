import { returnedRow } from '@loyalty/runtime';
import type { Queryable } from '@loyalty/runtime';

export async function insertSession(
  db: Queryable,
  s: { tenantId: number; memberId: number; tokenHash: Buffer; now: Date; expiresAt: Date },
): Promise<number> {
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO identity.member_sessions (tenant_id, member_id, token_hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
    [s.tenantId, s.memberId, s.tokenHash, s.now, s.expiresAt],
  );
  return returnedRow(rows, 'insert member session').id;
}

/** A live session of the tenant for this token hash: not revoked, not expired. */
export async function findLiveSession(
  db: Queryable,
  tenantId: number,
  tokenHash: Buffer,
  now: Date,
): Promise<{ id: number; member_id: number; expires_at: Date } | undefined> {
  const { rows } = await db.query<{ id: number; member_id: number; expires_at: Date }>(
    `SELECT id, member_id, expires_at FROM identity.member_sessions
      WHERE token_hash = $1 AND tenant_id = $2 AND revoked_at IS NULL AND expires_at > $3`,
    [tokenHash, tenantId, now],
  );
  return rows[0];
}

/** Revoke a live session; returns its member, or nothing when it was already revoked or expired. */
export async function revokeSession(
  db: Queryable,
  id: number,
  tenantId: number,
  now: Date,
): Promise<number | undefined> {
  const { rows } = await db.query<{ member_id: number }>(
    `UPDATE identity.member_sessions SET revoked_at = $3 WHERE id = $1 AND tenant_id = $2 AND revoked_at IS NULL AND expires_at > $3 RETURNING member_id`,
    [id, tenantId, now],
  );
  return rows[0]?.member_id;
}
