import { adminOperations, authOperations, identityOperations, internalOperations } from '@loyalty/contracts';
import { Endpoints } from '@loyalty/runtime';
import type { claimCodes } from './claim-codes.ts';
import type { memberAuth } from './member-auth.ts';
import type { memberDirectory } from './member-directory.ts';
import type { provisioning } from './provisioning.ts';

/** Subject -> handler table of the identity service. Handlers stay thin: validate, delegate. */
export function identityEndpoints(
  auth: ReturnType<typeof memberAuth>,
  admin: ReturnType<typeof provisioning>,
  directory: ReturnType<typeof memberDirectory>,
  claims: ReturnType<typeof claimCodes>,
): Endpoints {
  const a = authOperations;
  const i = identityOperations;
  const p = adminOperations;
  return new Endpoints('identity')
    .public(a['member.check'], (d, c) => auth.check(d, c.meta))
    .public(a['member.register'], (d, c) => auth.register(d, c.meta, c.log))
    .public(a['member.request_otp'], (d, c) => auth.requestOtp(d, c.meta, c.log))
    .public(a['member.verify_otp'], (d, c) => auth.verifyOtp(d, c.meta))
    .public(a['member.refresh'], (_d, c) => auth.refresh(c.meta))
    .public(a['member.logout'], (_d, c) => auth.logout(c.meta))
    .internal(internalOperations.authenticate, (d) => auth.authenticate(d))
    .internal(i.resolveMember, (d, c) => directory.resolve(d, c.meta))
    .internal(i.getMembers, (d, c) => directory.getMany(d, c.meta))
    .internal(i.issueClaimOtp, (d, c) => claims.issue(d, c.meta, c.log))
    .internal(i.verifyClaimOtp, (d, c) => claims.verify(d, c.meta))
    .internal(i.getTenant, (_d, c) => admin.getTenant(c.meta.tenant_id))
    .operator(p['admin.tenant.create'], (d) => admin.createTenant(d))
    .operator(p['admin.tenant.list'], () => admin.listTenants())
    .operator(p['admin.tenant.update'], (d) => admin.updateTenant(d))
    .operator(p['admin.app.create'], (d) => admin.createApp(d))
    .operator(p['admin.app.list'], (d) => admin.listApps(d))
    .operator(p['admin.app.rotate_key'], (d) => admin.rotateKey(d))
    .operator(p['admin.app.revoke'], (d) => admin.revoke(d));
}
