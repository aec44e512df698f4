import { returnedRow } from '@loyalty/runtime';
import type { Queryable } from '@loyalty/runtime';
import { liveMember } from './members.ts';

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

/** A live session of the tenant for this token hash: not revoked, not expired, its member not erased. */
export async function findLiveSession(
  db: Queryable,
  tenantId: number,
  tokenHash: Buffer,
  now: Date,
): Promise<{ id: number; member_id: number; expires_at: Date } | undefined> {
  const { rows } = await db.query<{ id: number; member_id: number; expires_at: Date }>(
    `SELECT s.id, s.member_id, s.expires_at FROM identity.member_sessions s
       JOIN identity.members m ON m.id = s.member_id AND ${liveMember('m')}
      WHERE s.token_hash = $1 AND s.tenant_id = $2 AND s.revoked_at IS NULL AND s.expires_at > $3`,
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

/** Revoke every live session of a member (its erasure): the ids, for the gateways to forget their tokens. */
export async function revokeMemberSessions(db: Queryable, memberId: number, now: Date): Promise<number[]> {
  const { rows } = await db.query<{ id: number }>(
    `UPDATE identity.member_sessions SET revoked_at = $2 WHERE member_id = $1 AND revoked_at IS NULL RETURNING id`,
    [memberId, now],
  );
  return rows.map((r) => Number(r.id));
}
