import {
  adminOperations,
  mailOperations,
  mailTemplateOperations,
  memberLocaleOperations,
  authOperations,
  identityOperations,
  importInternalOperations,
  internalOperations,
  memberDataOperations,
  memberMergeOperations,
  staffAdminOperations,
  staffOperations,
  tenantOffboardingOperations,
} from '@loyalty/contracts';
import { Endpoints, type Pool } from '@loyalty/runtime';
import { lookupMembers } from './members/member-import.ts';
import type { auditLog } from './audit/audit-log.ts';
import type { claimCodes } from './members/claim-codes.ts';
import type { memberCodes } from './members/member-codes.ts';
import type { memberAuth } from './members/member-auth.ts';
import type { memberDirectory } from './members/member-directory.ts';
import type { memberErasure } from './members/member-erasure.ts';
import type { memberExport } from './members/member-export.ts';
import type { memberConsents } from './members/consents.ts';
import type { provisioning } from './tenants/provisioning.ts';
import type { tenantOffboarding } from './tenants/offboarding.ts';
import type { staffMailSettings, tenantMailSettings } from './tenants/mail-settings.ts';
import type { mailTemplates } from './tenants/mail-templates.ts';
import type { memberLocale } from './members/member-locale.ts';
import type { memberMerges } from './members/member-merge.ts';
import type { staffAuth } from './staff/staff-auth.ts';
import type { staffMembers } from './staff/staff-members.ts';
import type { staffTeam } from './staff/staff-team.ts';

export interface IdentityParts {
  auth: ReturnType<typeof memberAuth>;
  admin: ReturnType<typeof provisioning>;
  directory: ReturnType<typeof memberDirectory>;
  claims: ReturnType<typeof claimCodes>;
  codes: ReturnType<typeof memberCodes>;
  staff: ReturnType<typeof staffAuth>;
  team: ReturnType<typeof staffTeam>;
  members: ReturnType<typeof staffMembers>;
  audit: ReturnType<typeof auditLog>;
  erasure: ReturnType<typeof memberErasure>;
  exports: ReturnType<typeof memberExport>;
  offboarding: ReturnType<typeof tenantOffboarding>;
  merges: ReturnType<typeof memberMerges>;
  consents: ReturnType<typeof memberConsents>;
  mail: ReturnType<typeof tenantMailSettings>;
  templates: ReturnType<typeof mailTemplates>;
  branding: ReturnType<typeof staffMailSettings>;
  locale: ReturnType<typeof memberLocale>;
  pool: Pool;
}

/** Subject -> handler table of the identity service. Handlers stay thin: validate, delegate. */
export function identityEndpoints(parts: IdentityParts): Endpoints {
  const { auth, admin, directory, claims, codes, staff, team, members, audit, erasure, exports, consents } = parts;
  const a = authOperations;
  const i = identityOperations;
  const p = adminOperations;
  const s = staffOperations;
  const sa = staffAdminOperations;
  return mailTemplateEndpoints(mergesAndOffboarding(new Endpoints('identity'), parts), parts)
    .public(a['member.check'], (d, c) => auth.check(d, c.meta))
    .public(a['member.register'], (d, c) => auth.register(d, c.meta, c.log))
    .public(a['member.request_otp'], (d, c) => auth.requestOtp(d, c.meta, c.log))
    .public(a['member.verify_otp'], (d, c) => auth.verifyOtp(d, c.meta))
    .public(a['member.refresh'], (_d, c) => auth.refresh(c.meta))
    .public(a['member.logout'], (_d, c) => auth.logout(c.meta))
    .public(memberDataOperations['members.erase'], (d, c) => erasure.request(d.member_id, c.meta))
    .public(memberDataOperations['members.export'], (d, c) => exports.request(d.member_id, c.meta))
    .public(memberDataOperations['members.consents.get'], (d, c) => consents.get(d.member_id, c.meta))
    .public(memberDataOperations['members.consents.update'], (d, c) => consents.update(d, c.meta))
    .public(memberLocaleOperations['members.locale.update'], (d, c) => parts.locale.update(d, c.meta))
    .gatewayInternal(internalOperations.unsubscribe, (d) => consents.unsubscribe(d))
    .gatewayInternal(internalOperations.authenticate, (d) => auth.authenticate(d))
    .gatewayInternal(internalOperations.authenticateStaff, (d) => staff.authenticate(d))
    .internal(i.resolveMember, (d, c) => directory.resolve(d, c.meta))
    .internal(i.getMembers, (d, c) => directory.getMany(d, c.meta))
    .internal(importInternalOperations.lookupMembers, (d, c) => lookupMembers(parts.pool, c.meta.tenant_id, d))
    .internal(i.issueClaimOtp, (d, c) => claims.issue(d, c.meta, c.log))
    .internal(i.verifyClaimOtp, (d, c) => claims.verify(d, c.meta))
    .internal(i.issueMemberOtp, (d, c) => codes.issue(d, c.meta, c.log))
    .internal(i.verifyMemberOtp, (d, c) => codes.verify(d, c.meta))
    .internal(i.getTenant, (_d, c) => admin.getTenant(c.meta.tenant_id))
    .staffSignIn(s['staff.auth.request_code'], (d, c) => staff.requestCode(d, c.log))
    .staffSignIn(s['staff.auth.verify_code'], (d) => staff.verifyCode(d))
    .staff(s['staff.auth.logout'], (_d, c) => staff.logout(c.meta))
    .staff(s['staff.me'], (_d, c) => staff.me(c.meta))
    .staff(s['staff.team.list'], (_d, c) => team.list(c.meta))
    .staff(s['staff.team.invite'], (d, c) => team.invite(d, c.meta))
    .staff(s['staff.team.update'], (d, c) => team.update(d, c.meta))
    .staff(s['staff.members.find'], (d, c) => members.find(d, c.meta))
    .staff(s['staff.members.get'], (d, c) => members.get(d, c.meta))
    .staff(s['staff.members.consents'], (d, c) => consents.get(d.member_id, c.meta))
    .staff(s['staff.members.consents.update'], (d, c) => consents.update(d, c.meta))
    .staff(s['staff.audit.list'], (d, c) => audit.list(d, c.meta))
    .staff(s['staff.audit.verify'], (d, c) => audit.verify(c.meta.tenant_id, d.anchor))
    .operator(p['admin.tenant.create'], (d, c) => admin.createTenant(d, c.meta))
    .operator(p['admin.tenant.list'], () => admin.listTenants())
    .operator(p['admin.tenant.update'], (d, c) => admin.updateTenant(d, c.meta))
    .operator(p['admin.app.create'], (d, c) => admin.createApp(d, c.meta))
    .operator(p['admin.app.list'], (d) => admin.listApps(d))
    .operator(p['admin.app.rotate_key'], (d, c) => admin.rotateKey(d, c.meta))
    .operator(p['admin.app.revoke'], (d, c) => admin.revoke(d, c.meta))
    .operator(sa['admin.staff.create'], (d, c) => team.adminCreate(d, c.meta))
    .operator(sa['admin.staff.list'], (d) => team.adminList(d))
    .operator(sa['admin.audit.verify'], async (d) => {
      await admin.requireTenant(d.tenant_id);
      return audit.verify(d.tenant_id, d.anchor);
    });
}

/** Members' merges (merchant API and the console) and the operator's offboarding of a tenant. */
function mergesAndOffboarding(
  endpoints: Endpoints,
  parts: Pick<IdentityParts, 'merges' | 'offboarding' | 'mail'>,
): Endpoints {
  const o = tenantOffboardingOperations;
  return endpoints
    .operator(mailOperations['admin.tenant.mail.get'], (d) => parts.mail.get(d))
    .operator(mailOperations['admin.tenant.mail.update'], (d, c) => parts.mail.update(d, c.meta))
    .public(memberMergeOperations['members.merge'], (d, c) =>
      parts.merges.request(d.member_id, d.source_member_id, c.meta),
    )
    .staff(staffOperations['staff.members.merge'], (d, c) =>
      parts.merges.request(d.member_id, d.source_member_id, c.meta),
    )
    .operator(o['admin.tenant.deactivate'], (d, c) => parts.offboarding.deactivate(d, c.meta))
    .operator(o['admin.tenant.reactivate'], (d, c) => parts.offboarding.reactivate(d, c.meta))
    .operator(o['admin.tenant.export'], (d, c) => parts.offboarding.export(d, c.meta))
    .operator(o['admin.tenant.purge'], (d, c) => parts.offboarding.purge(d, c.meta));
}

/** A tenant's mail templates and branding: managers in the staff API (the console), the operator (API and CLI). */
function mailTemplateEndpoints(endpoints: Endpoints, parts: Pick<IdentityParts, 'templates' | 'branding'>): Endpoints {
  const t = parts.templates;
  const s = staffOperations;
  const o = mailTemplateOperations;
  return endpoints
    .staff(s['staff.mail.settings.get'], (_d, c) => parts.branding.get(c.meta))
    .staff(s['staff.mail.settings.update'], (d, c) => parts.branding.update(d, c.meta))
    .staff(s['staff.mail.templates.list'], (_d, c) => t.list(c.meta.tenant_id))
    .staff(s['staff.mail.templates.get'], (d, c) => t.get(c.meta.tenant_id, d))
    .staff(s['staff.mail.templates.update'], (d, c) => t.update(c.meta.tenant_id, d, c.meta))
    .staff(s['staff.mail.templates.reset'], (d, c) => t.reset(c.meta.tenant_id, d, c.meta))
    .staff(s['staff.mail.templates.preview'], (d, c) => t.preview(c.meta.tenant_id, d))
    .operator(o['admin.tenant.mail.templates.list'], (d) => t.list(d.tenant_id))
    .operator(o['admin.tenant.mail.templates.get'], (d) => t.get(d.tenant_id, d))
    .operator(o['admin.tenant.mail.templates.update'], (d, c) => t.update(d.tenant_id, d, c.meta))
    .operator(o['admin.tenant.mail.templates.reset'], (d, c) => t.reset(d.tenant_id, d, c.meta))
    .operator(o['admin.tenant.mail.templates.preview'], (d) => t.preview(d.tenant_id, d));
}
