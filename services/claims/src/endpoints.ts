import { claimsOperations } from '@loyalty/contracts';
import { Endpoints } from '@loyalty/runtime';
import type { approvals } from './approval.ts';
import type { claimRequests } from './claim-requests.ts';

/** Subject -> handler table of the claims service. Handlers stay thin: validate, delegate. */
export function claimsEndpoints(
  claims: ReturnType<typeof claimRequests>,
  approval: ReturnType<typeof approvals>,
): Endpoints {
  const o = claimsOperations;
  return new Endpoints('claims')
    .public(o['claims.request_otp'], (d, c) => claims.requestOtp(d, c.meta))
    .public(o['claims.create'], (d, c) => claims.create(d, c.meta))
    .public(o['claims.list'], (d, c) => claims.list(d, c.meta))
    .public(o['claims.get'], (d, c) => claims.get(d, c.meta))
    .public(o['claims.approve'], (d, c) => approval.approve(d, c.meta))
    .public(o['claims.reject'], (d, c) => claims.reject(d, c.meta));
}
