import { AppError, Email, type Meta } from '@loyalty/contracts';
import { withTransaction, type Logger } from '@loyalty/runtime';
import { mailCode, tenantSandbox, type MemberAuthDeps } from './member-auth.ts';
import { checkOtp, issueOtp } from './otp.ts';
import { findMemberBy } from './store/members.ts';

/** Claim verification codes: the same one-time codes as sign-in, under their own purpose. */
export function claimCodes(deps: MemberAuthDeps) {
  const email = (value: string) => {
    const e = Email.safeParse(value);
    if (!e.success)
      throw new AppError('validation_error', undefined, {
        fields: [{ field: 'member_email', message: 'must be a valid email address' }],
      });
    return e.data;
  };
  return {
    async issue(d: { member_email: string; context: Record<string, unknown> }, meta: Meta, log: Logger) {
      return withTransaction(deps.pool, async (db) => {
        const sandbox = await tenantSandbox(db, meta.tenant_id);
        const member = await findMemberBy(db, meta.tenant_id, { email: email(d.member_email) }, true);
        if (!member) throw new AppError('member_not_found');
        const { code, expiresAt } = await issueOtp(db, deps.otp, deps.clock, {
          tenantId: meta.tenant_id,
          memberId: member.id,
          purpose: 'claim',
          context: d.context,
        });
        await mailCode(deps, log, sandbox, member, code, 'claim verification');
        return {
          member_id: member.id,
          expires_at: expiresAt.toISOString(),
          expires_in_minutes: deps.otp.ttlMinutes,
          ...(sandbox ? { otp_code: code } : {}),
        };
      });
    },

    async verify(d: { member_email: string; code: string }, meta: Meta) {
      // A wrong try is committed before the failure is answered.
      const outcome = await withTransaction(deps.pool, async (db) => {
        const member = await findMemberBy(db, meta.tenant_id, { email: email(d.member_email) });
        if (!member) return { reason: 'no_code' };
        const check = await checkOtp(db, deps.otp, deps.clock, member.id, 'claim', d.code);
        if (!check.ok) return { reason: check.error.code };
        return { member_id: member.id, context: check.context };
      });
      if ('reason' in outcome) throw new AppError('invalid_verification_code', undefined, { reason: outcome.reason });
      return outcome;
    },
  };
}
