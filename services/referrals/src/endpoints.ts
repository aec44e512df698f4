import { memberDataInternalOperations, referralOperations, staffOperations } from '@loyalty/contracts';
import { Endpoints } from '@loyalty/runtime';
import type { ReferralProgramme } from './referral-programme.ts';
import type { staffView } from './staff-view.ts';
import type { ReferralsMemberData } from './member-data.ts';

/** Operation -> handler table of the referrals service. Handlers stay thin: validate, delegate. */
export function referralEndpoints(
  p: ReferralProgramme,
  staff: ReturnType<typeof staffView>,
  memberData: ReferralsMemberData,
): Endpoints {
  const r = referralOperations;
  const s = staffOperations;
  return new Endpoints('referrals')
    .public(r['referrals.code.get'], (d, c) => p.code(d, c.meta))
    .public(r['referrals.stats'], (d, c) => p.stats(d, c.meta))
    .public(r['referrals.top_referrers'], (d, c) => p.topReferrers(d, c.meta))
    .public(r['referrals.of_referrer'], (d, c) => p.referralsOf(d, c.meta))
    .public(r['referrals.validate_code'], (d, c) => p.validate(d, c.meta))
    .public(r['referrals.apply'], (d, c) => p.apply(d, c.meta))
    .staff(s['staff.members.referrals'], (d, c) => staff.memberReferrals(d, c.meta))
    .staff(s['staff.referrals.dashboard'], (d, c) => staff.dashboard(d, c.meta))
    .internal(memberDataInternalOperations.referralsErase, (d, c) => memberData.erase(d, c.meta))
    .internal(memberDataInternalOperations.referralsExport, (d, c) => memberData.export(d, c.meta));
}
