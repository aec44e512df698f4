import { isUniqueViolation, type Queryable } from '@loyalty/runtime';

export interface ReferralCode {
  tenant_id: number;
  card_id: number;
  member_id: number;
  code: string;
}

/** The member's code for the card, if one was made. */
export async function findCodeOf(db: Queryable, cardId: number, memberId: number): Promise<ReferralCode | undefined> {
  const { rows } = await db.query<ReferralCode>(
    `SELECT tenant_id, card_id, member_id, code FROM referrals.referral_codes WHERE card_id = $1 AND member_id = $2`,
    [cardId, memberId],
  );
  return rows[0];
}

export async function findCode(db: Queryable, tenantId: number, code: string): Promise<ReferralCode | undefined> {
  const { rows } = await db.query<ReferralCode>(
    `SELECT tenant_id, card_id, member_id, code FROM referrals.referral_codes WHERE tenant_id = $1 AND code = $2`,
    [tenantId, code],
  );
  return rows[0];
}

/**
 * The member's code for the card, created when there is none. Two first requests at once both
 * end with the one row that won (ON CONFLICT on the member's key); a code already taken by
 * another member of the tenant is drawn again.
 */
export async function ensureCode(
  db: Queryable,
  key: { tenantId: number; cardId: number; memberId: number },
  draw: () => string,
  maxTries = 8,
): Promise<ReferralCode> {
  for (let i = 0; i < maxTries; i++) {
    const existing = await findCodeOf(db, key.cardId, key.memberId);
    if (existing) return existing;
    try {
      const { rows } = await db.query<ReferralCode>(
        `INSERT INTO referrals.referral_codes (tenant_id, card_id, member_id, code) VALUES ($1, $2, $3, $4)
         ON CONFLICT (card_id, member_id) DO NOTHING RETURNING tenant_id, card_id, member_id, code`,
        [key.tenantId, key.cardId, key.memberId, draw()],
      );
      if (rows[0]) return rows[0];
    } catch (err) {
      if (!isUniqueViolation(err, 'referral_codes_tenant_code')) throw err;
    }
  }
  throw new Error('could not draw a free referral code');
}
