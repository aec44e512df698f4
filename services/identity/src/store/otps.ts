import { returnedRow } from '@loyalty/runtime';
import type { Queryable } from '@loyalty/runtime';

/** Whose code it is: a member's (sign-in, claim) or a staff user's (console sign-in). */
export type CodeHolder = { memberId: number } | { staffId: number };
const holderColumn = (h: CodeHolder) =>
  'memberId' in h ? { column: 'member_id', id: h.memberId } : { column: 'staff_id', id: h.staffId };

export interface Otp {
  id: number;
  member_id: number | null;
  staff_id: number | null;
  code_hash: Buffer;
  context: Record<string, unknown>;
  attempts: number;
  created_at: Date;
  expires_at: Date;
  consumed_at: Date | null;
}

export async function insertOtp(
  db: Queryable,
  o: {
    tenantId: number;
    holder: CodeHolder;
    purpose: string;
    codeHash: Buffer;
    context: Record<string, unknown>;
    now: Date;
    expiresAt: Date;
  },
): Promise<Otp> {
  const { rows } = await db.query<Otp>(
    `INSERT INTO identity.otps (tenant_id, member_id, staff_id, purpose, code_hash, context, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
    [
      o.tenantId,
      'memberId' in o.holder ? o.holder.memberId : null,
      'staffId' in o.holder ? o.holder.staffId : null,
      o.purpose,
      o.codeHash,
      JSON.stringify(o.context),
      o.now,
      o.expiresAt,
    ],
  );
  return returnedRow(rows, 'insert otp');
}

/** Codes issued to a member (or staff user) for any purpose since `since`, used or not, newest first (for cooldown and hourly cap). */
export async function recentOtps(db: Queryable, holder: CodeHolder, since: Date): Promise<Otp[]> {
  const h = holderColumn(holder);
  const { rows } = await db.query<Otp>(
    `SELECT * FROM identity.otps WHERE ${h.column} = $1 AND created_at > $2 ORDER BY created_at DESC`,
    [h.id, since],
  );
  return rows;
}

/** The newest code of a member (or staff user) for a purpose, locked: only it can be verified. */
export async function latestOtpForUpdate(db: Queryable, holder: CodeHolder, purpose: string): Promise<Otp | undefined> {
  const h = holderColumn(holder);
  const { rows } = await db.query<Otp>(
    `SELECT * FROM identity.otps WHERE ${h.column} = $1 AND purpose = $2 ORDER BY created_at DESC, id DESC LIMIT 1 FOR UPDATE`,
    [h.id, purpose],
  );
  return rows[0];
}

export async function recordWrongAttempt(db: Queryable, id: number): Promise<number> {
  const { rows } = await db.query<{ attempts: number }>(
    `UPDATE identity.otps SET attempts = attempts + 1 WHERE id = $1 RETURNING attempts`,
    [id],
  );
  return returnedRow(rows, 'count otp attempt').attempts;
}

export async function consumeOtp(db: Queryable, id: number, now: Date): Promise<boolean> {
  const r = await db.query(`UPDATE identity.otps SET consumed_at = $2 WHERE id = $1 AND consumed_at IS NULL`, [
    id,
    now,
  ]);
  return r.rowCount === 1;
}

/**
 * Take back a code whose mail could not be sent (it was committed before the mail, which is sent
 * outside the transaction): it then counts for neither the cooldown nor the hourly cap.
 */
export async function withdrawOtp(db: Queryable, id: number): Promise<void> {
  await db.query(`DELETE FROM identity.otps WHERE id = $1 AND consumed_at IS NULL`, [id]);
}
