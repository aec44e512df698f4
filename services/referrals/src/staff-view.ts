import { referralPeriods, type ReferralPeriod, type StaffMeta } from '@loyalty/contracts';
import type { Pool } from '@loyalty/runtime';
import type { ReferralProgramme } from './referral-programme.ts';
import { findCodeOf } from './store/codes.ts';

/**
 * The referrals part of the staff console: a member's code and referrals (looking does not make a
 * code: `referral_code` stays null until the member's app asks for one), and the dashboard of a
 * card (the statistics of every period and the top referrers of one).
 */
export function staffView(pool: Pool, programme: ReferralProgramme) {
  return {
    async memberReferrals(d: { card_id: number; member_id: number; limit: number; offset: number }, meta: StaffMeta) {
      const page = await programme.referralsOf(d, meta);
      const code = await findCodeOf(pool, d.card_id, d.member_id);
      return {
        card_id: d.card_id,
        member_id: d.member_id,
        referral_code: code && code.tenant_id === meta.tenant_id ? code.code : null,
        ...page,
      };
    },

    async dashboard(d: { card_id: number; period: ReferralPeriod; limit: number }, meta: StaffMeta) {
      const periods = [];
      for (const period of referralPeriods) periods.push(await programme.stats({ card_id: d.card_id, period }, meta));
      const top = await programme.topReferrers(d, meta);
      return { card_id: d.card_id, periods, top_referrers: top.referrers, period: d.period };
    },
  };
}
