import { AppError, Email, type ServiceMeta } from '@loyalty/contracts';
import { withTransaction, type Logger } from '@loyalty/runtime';
import { isSandbox, mailCode, requireEmail, type MemberAuthDeps } from './member-auth.ts';
import { checkOtp, issueOtp } from './otp.ts';
import { findMemberBy } from '../store/members.ts';

/**
 * The `reason` of a claim code that is not right: an unknown email, a member without a code, a
 * used code and wrong digits all answer this same reason (and no `attempts_remaining`), so claim
 * creation cannot tell a caller which emails are members. Only a code that was issued, i.e. after
 * a request-otp that already answered for the member, can be `otp_expired` or
 * `otp_attempts_exceeded`.
 */
const INVALID_CODE = 'invalid_code';
const failureReason = (code: string) =>
  code === 'otp_expired' || code === 'otp_attempts_exceeded' ? code : INVALID_CODE;

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
    /** The code is committed, then mailed outside the transaction (withdrawn if the mail fails). */
    async issue(d: { member_email: string; context: Record<string, unknown> }, meta: ServiceMeta, log: Logger) {
      const { sandbox, member, otp } = await withTransaction(deps.pool, async (db) => {
        const sandbox = await isSandbox(db, meta.tenant_id);
        const member = await findMemberBy(db, meta.tenant_id, { email: email(d.member_email) }, true);
        if (!member) throw new AppError('member_not_found');
        requireEmail(member);
        const otp = await issueOtp(db, deps.otp, deps.clock, {
          tenantId: meta.tenant_id,
          memberId: member.id,
          purpose: 'claim',
          context: d.context,
        });
        return { sandbox, member, otp };
      });
      await mailCode(deps, log, { tenantId: meta.tenant_id, sandbox }, member, otp.code, 'claim verification', otp.id);
      return {
        member_id: member.id,
        expires_at: otp.expiresAt.toISOString(),
        expires_in_minutes: deps.otp.ttlMinutes,
        ...(sandbox ? { otp_code: otp.code } : {}),
      };
    },

    /**
     * Consume a claim code. Under `meta.idempotency_key` (the claim creation's own key) a repeated
     * verification answers what the first one did, so a creation interrupted after consuming the
     * code can be retried with its key.
     */
    async verify(d: { member_email: string; code: string }, meta: ServiceMeta) {
      const replay = meta.idempotency_key && {
        tenantId: meta.tenant_id,
        key: `claim-code:${meta.idempotency_key}`,
        operation: 'internal.claim_otp.verify',
        data: d,
      };
      const stored = replay
        ? await deps.replays.find<{ member_id: number; context: Record<string, unknown> }>(replay)
        : undefined;
      if (stored) return stored;
      // A wrong try is committed before the failure is answered.
      const outcome = await withTransaction(deps.pool, async (db) => {
        const member = await findMemberBy(db, meta.tenant_id, { email: email(d.member_email) });
        if (!member) return { reason: INVALID_CODE };
        const check = await checkOtp(db, deps.otp, deps.clock, member.id, 'claim', d.code);
        if (!check.ok) return { reason: failureReason(check.error.code) };
        const verified = { member_id: member.id, context: check.context };
        if (replay) await deps.replays.save(db, replay, verified);
        return verified;
      });
      if ('reason' in outcome) throw new AppError('invalid_verification_code', undefined, { reason: outcome.reason });
      return outcome;
    },
  };
}
