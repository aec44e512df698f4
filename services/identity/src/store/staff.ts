import type { StaffRole } from '@loyalty/contracts';
import { AppError } from '@loyalty/contracts';
import { isUniqueViolation, type Queryable, returnedRow } from '@loyalty/runtime';

/** A staff user as the staff API shows it. */
export interface StaffUser {
  id: number;
  tenant_id: number;
  email: string;
  name: string;
  role: StaffRole;
  active: boolean;
  created_at: string;
  last_sign_in_at: string | null;
}

const iso = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const cols = `id, tenant_id, email, name, role, active, ${iso('created_at')} AS created_at, ${iso('last_sign_in_at')} AS last_sign_in_at`;

export async function insertStaff(
  db: Queryable,
  s: { tenantId: number; email: string; name: string; role: StaffRole; now: Date },
): Promise<StaffUser> {
  try {
    const { rows } = await db.query<StaffUser>(
      `INSERT INTO identity.staff_users (tenant_id, email, name, role, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING ${cols}`,
      [s.tenantId, s.email, s.name, s.role, s.now],
    );
    return returnedRow(rows, 'insert staff user');
  } catch (err) {
    if (isUniqueViolation(err, 'staff_users_tenant_email')) throw new AppError('staff_email_taken');
    throw err;
  }
}

export async function listStaff(db: Queryable, tenantId: number): Promise<StaffUser[]> {
  return (
    await db.query<StaffUser>(`SELECT ${cols} FROM identity.staff_users WHERE tenant_id = $1 ORDER BY id`, [tenantId])
  ).rows;
}

/** One staff user of the tenant (a foreign id is not found); `lock` takes the row lock. */
export async function findStaff(
  db: Queryable,
  tenantId: number,
  by: { id: number } | { email: string },
  lock = false,
): Promise<StaffUser | undefined> {
  const [col, value] = 'id' in by ? ['id', by.id] : ['email', by.email];
  const { rows } = await db.query<StaffUser>(
    `SELECT ${cols} FROM identity.staff_users WHERE tenant_id = $1 AND ${col} = $2${lock ? ' FOR UPDATE' : ''}`,
    [tenantId, value],
  );
  return rows[0];
}

export async function updateStaff(
  db: Queryable,
  id: number,
  s: { name: string; role: StaffRole; active: boolean },
): Promise<StaffUser> {
  const { rows } = await db.query<StaffUser>(
    `UPDATE identity.staff_users SET name = $2, role = $3, active = $4 WHERE id = $1 RETURNING ${cols}`,
    [id, s.name, s.role, s.active],
  );
  return returnedRow(rows, 'update staff user');
}

/** The tenant's active managers, locked (so two managers cannot demote each other at once). */
export async function lockActiveManagers(db: Queryable, tenantId: number): Promise<number[]> {
  const { rows } = await db.query<{ id: number }>(
    `SELECT id FROM identity.staff_users WHERE tenant_id = $1 AND role = 'manager' AND active ORDER BY id FOR UPDATE`,
    [tenantId],
  );
  return rows.map((r) => r.id);
}

export async function markSignedIn(db: Queryable, id: number, now: Date): Promise<StaffUser> {
  const { rows } = await db.query<StaffUser>(
    `UPDATE identity.staff_users SET last_sign_in_at = $2 WHERE id = $1 RETURNING ${cols}`,
    [id, now],
  );
  return returnedRow(rows, 'mark staff signed in');
}

export async function insertStaffSession(
  db: Queryable,
  s: { tenantId: number; staffId: number; tokenHash: Buffer; now: Date; expiresAt: Date },
): Promise<number> {
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO identity.staff_sessions (tenant_id, staff_id, token_hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
    [s.tenantId, s.staffId, s.tokenHash, s.now, s.expiresAt],
  );
  return returnedRow(rows, 'insert staff session').id;
}

/** The live session of a token hash with its active staff user: not revoked, not expired. */
export async function findLiveStaffSession(
  db: Queryable,
  tokenHash: Buffer,
  now: Date,
): Promise<
  | {
      session_id: number;
      tenant_id: number;
      staff_id: number;
      role: StaffRole;
      email: string;
      expires_at: Date;
      tenant_inactive: boolean;
    }
  | undefined
> {
  const { rows } = await db.query<{
    session_id: number;
    tenant_id: number;
    staff_id: number;
    role: StaffRole;
    email: string;
    expires_at: Date;
    tenant_inactive: boolean;
  }>(
    `SELECT s.id AS session_id, s.tenant_id, u.id AS staff_id, u.role, u.email, s.expires_at,
            t.deactivated_at IS NOT NULL AS tenant_inactive
       FROM identity.staff_sessions s JOIN identity.staff_users u ON u.id = s.staff_id
       JOIN identity.tenants t ON t.id = s.tenant_id
      WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2 AND u.active`,
    [tokenHash, now],
  );
  return rows[0];
}

export async function revokeStaffSession(db: Queryable, id: number, tenantId: number, now: Date): Promise<boolean> {
  const r = await db.query(
    `UPDATE identity.staff_sessions SET revoked_at = $3 WHERE id = $1 AND tenant_id = $2 AND revoked_at IS NULL`,
    [id, tenantId, now],
  );
  return (r.rowCount ?? 0) > 0;
}

/** End every live session of a staff user (deactivation). */
export async function revokeStaffSessions(db: Queryable, staffId: number, now: Date): Promise<void> {
  await db.query(`UPDATE identity.staff_sessions SET revoked_at = $2 WHERE staff_id = $1 AND revoked_at IS NULL`, [
    staffId,
    now,
  ]);
}
