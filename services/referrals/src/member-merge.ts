import type { z } from 'zod';
import type { MergeMemberDataRequest, ServiceMeta } from '@loyalty/contracts';
import { withTransaction, type Pool } from '@loyalty/runtime';

/**
 * The referrals part of a member merge, in one transaction:
 * - the source's referral codes become the target's on cards where the target has none (a code
 *   keeps working and its referrals count for the target); where the target has its own, the
 *   source's code is withdrawn (one code per member and card);
 * - referrals the source made (as referrer) become the target's, pending bonuses included (they
 *   are paid to the target); referrals of which the source is the referee become the target's
 *   where the target was not referred on that card already;
 * - a referral between the two members stays as it is (a member cannot refer themself).
 * Idempotent by state: a repeated request finds nothing left to move.
 */
export async function mergeReferrals(pool: Pool, d: z.output<typeof MergeMemberDataRequest>, meta: ServiceMeta) {
  const args = [meta.tenant_id, d.source_member_id, d.target_member_id];
  return withTransaction(pool, async (db) => {
    const codes = await db.query(
      `UPDATE referrals.referral_codes c SET member_id = $3
        WHERE c.tenant_id = $1 AND c.member_id = $2
          AND NOT EXISTS (SELECT 1 FROM referrals.referral_codes t WHERE t.card_id = c.card_id AND t.member_id = $3)`,
      args,
    );
    const withdrawn = await db.query(`DELETE FROM referrals.referral_codes WHERE tenant_id = $1 AND member_id = $2`, [
      meta.tenant_id,
      d.source_member_id,
    ]);
    const asReferrer = await db.query(
      `UPDATE referrals.referrals SET referrer_id = $3 WHERE tenant_id = $1 AND referrer_id = $2 AND referee_id <> $3`,
      args,
    );
    const asReferee = await db.query(
      `UPDATE referrals.referrals r SET referee_id = $3
        WHERE r.tenant_id = $1 AND r.referee_id = $2 AND r.referrer_id <> $3
          AND NOT EXISTS (SELECT 1 FROM referrals.referrals t WHERE t.card_id = r.card_id AND t.referee_id = $3)`,
      args,
    );
    return {
      moved: {
        referral_codes: codes.rowCount ?? 0,
        referral_codes_withdrawn: withdrawn.rowCount ?? 0,
        referrals_as_referrer: asReferrer.rowCount ?? 0,
        referrals_as_referee: asReferee.rowCount ?? 0,
      },
    };
  });
}
