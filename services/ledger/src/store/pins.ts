import type { Queryable } from '@loyalty/runtime';

export interface MemberPin {
  pin_hash: string;
  failed_attempts: number;
  locked_until: Date | null;
  consecutive_locks: number;
}

export async function findPin(
  db: Queryable,
  tenantId: number,
  memberId: number,
  forUpdate = false,
): Promise<MemberPin | undefined> {
  const { rows } = await db.query<MemberPin>(
    `SELECT pin_hash, failed_attempts, locked_until, consecutive_locks FROM ledger.member_pins WHERE tenant_id = $1 AND member_id = $2${forUpdate ? ' FOR UPDATE' : ''}`,
    [tenantId, memberId],
  );
  return rows[0];
}

export async function savePin(
  db: Queryable,
  tenantId: number,
  memberId: number,
  pinHash: string,
  now: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO ledger.member_pins (tenant_id, member_id, pin_hash, failed_attempts, locked_until, updated_at) VALUES ($1, $2, $3, 0, NULL, $4)
     ON CONFLICT (tenant_id, member_id) DO UPDATE SET pin_hash = EXCLUDED.pin_hash, failed_attempts = 0, locked_until = NULL, consecutive_locks = 0, updated_at = EXCLUDED.updated_at`,
    [tenantId, memberId, pinHash, now],
  );
}

export async function savePinAttempts(
  db: Queryable,
  tenantId: number,
  memberId: number,
  state: { failedAttempts: number; lockedUntil: Date | null; consecutiveLocks: number },
  now: Date,
): Promise<void> {
  await db.query(
    'UPDATE ledger.member_pins SET failed_attempts = $3, locked_until = $4, consecutive_locks = $5, updated_at = $6 WHERE tenant_id = $1 AND member_id = $2',
    [tenantId, memberId, state.failedAttempts, state.lockedUntil, state.consecutiveLocks, now],
  );
}
