import {
  adminOperations,
  authOperations,
  identityOperations,
  internalOperations,
  operationInput,
  type Meta,
} from '@loyalty/contracts';
import { endpoint, type Endpoint } from '@loyalty/runtime';
import type { claimCodes } from './claim-codes.ts';
import type { memberAuth } from './member-auth.ts';
import type { memberDirectory } from './member-directory.ts';
import type { provisioning } from './provisioning.ts';

type In<T> = T;

/** Subject -> handler table of the identity service. Handlers stay thin: validate, delegate. */
export function identityEndpoints(
  auth: ReturnType<typeof memberAuth>,
  admin: ReturnType<typeof provisioning>,
  directory: ReturnType<typeof memberDirectory>,
  claims: ReturnType<typeof claimCodes>,
): Record<string, Endpoint<never>> {
  const i = identityOperations;
  const a = authOperations;
  const p = adminOperations;
  const table: Record<string, Endpoint<Meta>> = {
    [a['member.check'].operation]: endpoint(operationInput(a['member.check']), (d, c) =>
      auth.check(d as In<{ email?: string; phone?: string }>, c.meta),
    ),
    [a['member.register'].operation]: endpoint(operationInput(a['member.register']), (d, c) =>
      auth.register(d as In<{ name: string; email: string; phone: string; accepts_emails?: boolean }>, c.meta, c.log),
    ),
    [a['member.request_otp'].operation]: endpoint(operationInput(a['member.request_otp']), (d, c) =>
      auth.requestOtp(d as In<{ email: string }>, c.meta, c.log),
    ),
    [a['member.verify_otp'].operation]: endpoint(operationInput(a['member.verify_otp']), (d, c) =>
      auth.verifyOtp(d as In<{ email: string; code: string }>, c.meta),
    ),
    [a['member.refresh'].operation]: endpoint(undefined, (_d, c) => auth.refresh(c.meta)),
    [a['member.logout'].operation]: endpoint(undefined, (_d, c) => auth.logout(c.meta)),
    [internalOperations.authenticate.operation]: endpoint(internalOperations.authenticate.request, (d) =>
      auth.authenticate(d),
    ),
    [i.resolveMember.operation]: endpoint(i.resolveMember.request, (d, c) => directory.resolve(d, c.meta)),
    [i.getMembers.operation]: endpoint(i.getMembers.request, (d, c) => directory.getMany(d, c.meta)),
    [i.issueClaimOtp.operation]: endpoint(i.issueClaimOtp.request, (d, c) => claims.issue(d, c.meta, c.log)),
    [i.verifyClaimOtp.operation]: endpoint(i.verifyClaimOtp.request, (d, c) => claims.verify(d, c.meta)),
    [p['admin.tenant.create'].operation]: endpoint(operationInput(p['admin.tenant.create']), (d) =>
      admin.createTenant(d as In<{ name: string; sandbox: boolean }>),
    ),
    [p['admin.tenant.list'].operation]: endpoint(undefined, () => admin.listTenants()),
    [p['admin.app.create'].operation]: endpoint(operationInput(p['admin.app.create']), (d) =>
      admin.createApp(d as Parameters<typeof admin.createApp>[0]),
    ),
    [p['admin.app.list'].operation]: endpoint(operationInput(p['admin.app.list']), (d) =>
      admin.listApps(d as { tenant_id: number }),
    ),
    [p['admin.app.rotate_key'].operation]: endpoint(operationInput(p['admin.app.rotate_key']), (d) =>
      admin.rotateKey(d as { app_id: string }),
    ),
    [p['admin.app.revoke'].operation]: endpoint(operationInput(p['admin.app.revoke']), (d) =>
      admin.revoke(d as { app_id: string }),
    ),
  };
  return table as Record<string, Endpoint<never>>;
}
