import { claimsOperations, memberDataInternalOperations, staffOperations } from '@loyalty/contracts';
import { auditActor, Endpoints } from '@loyalty/runtime';
import type { approvals } from './approval.ts';
import type { claimRequests } from './claim-requests.ts';
import type { ClaimsMemberData } from './member-data.ts';
import type { staffQueue } from './staff-queue.ts';

/** Subject -> handler table of the claims service. Handlers stay thin: validate, delegate. */
export function claimsEndpoints(
  claims: ReturnType<typeof claimRequests>,
  approval: ReturnType<typeof approvals>,
  queue: ReturnType<typeof staffQueue>,
  memberData: ClaimsMemberData,
): Endpoints {
  const o = claimsOperations;
  const s = staffOperations;
  return new Endpoints('claims')
    .public(o['claims.request_otp'], (d, c) => claims.requestOtp(d, c.meta))
    .public(o['claims.create'], (d, c) => claims.create(d, c.meta))
    .public(o['claims.list'], (d, c) => claims.list(d, c.meta))
    .public(o['claims.get'], (d, c) => claims.get(d, c.meta))
    .public(o['claims.approve'], (d, c) => approval.approve(d, c.meta, auditActor(c.meta)))
    .public(o['claims.reject'], (d, c) => claims.reject(d, c.meta, auditActor(c.meta)))
    .staff(s['staff.claims.list'], (d, c) => queue.list(d, c.meta))
    .staff(s['staff.claims.approve'], (d, c) => queue.approve(d, c.meta))
    .staff(s['staff.claims.reject'], (d, c) => queue.reject(d, c.meta))
    .internal(memberDataInternalOperations.claimsErase, (d, c) => memberData.erase(d, c.meta))
    .internal(memberDataInternalOperations.claimsExport, (d, c) => memberData.export(d, c.meta));
}
