import { operationInput, referralOperations, type Meta, type Operation } from '@loyalty/contracts';
import { endpoint, type Endpoint } from '@loyalty/runtime';
import type { ReferralProgramme } from './referral-programme.ts';

/** Operation -> handler table of the referrals service. Handlers stay thin: validate, delegate. */
export function referralEndpoints(p: ReferralProgramme): Record<string, Endpoint<never>> {
  const r = referralOperations;
  // The input schema is the contract's (params + query + body), validated again here.
  const on = <D>(op: Operation, handler: (d: D, meta: Meta) => Promise<unknown>): [string, Endpoint<Meta>] => [
    op.operation,
    endpoint(operationInput(op), (d, c) => handler(d as D, c.meta as Meta)),
  ];
  const table: Record<string, Endpoint<Meta>> = Object.fromEntries([
    on<Parameters<ReferralProgramme['code']>[0]>(r['referrals.code.get'], (d, m) => p.code(d, m)),
    on<Parameters<ReferralProgramme['stats']>[0]>(r['referrals.stats'], (d, m) => p.stats(d, m)),
    on<Parameters<ReferralProgramme['topReferrers']>[0]>(r['referrals.top_referrers'], (d, m) => p.topReferrers(d, m)),
    on<Parameters<ReferralProgramme['referralsOf']>[0]>(r['referrals.of_referrer'], (d, m) => p.referralsOf(d, m)),
    on<Parameters<ReferralProgramme['validate']>[0]>(r['referrals.validate_code'], (d, m) => p.validate(d, m)),
    on<Parameters<ReferralProgramme['apply']>[0]>(r['referrals.apply'], (d, m) => p.apply(d, m)),
  ]);
  return table as Record<string, Endpoint<never>>;
}
