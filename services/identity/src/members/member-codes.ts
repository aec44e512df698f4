import { AppError, type ServiceMeta } from '@loyalty/contracts';
import { withTransaction, type Logger } from '@loyalty/runtime';
import { isSandbox, mailCode, requireEmail, type MemberAuthDeps } from './member-auth.ts';
import { checkOtp, issueOtp } from './otp.ts';
import { findMemberBy } from '../store/members.ts';

type Purpose = 'transfer';
const mailedAs: Record<Purpose, 'transfer verification'> = { transfer: 'transfer verification' };

/** Why a code is not right: as for claim codes, only an issued code can be expired or dead. */
const failureReason = (code: string) =>
  code === 'otp_expired' || code === 'otp_attempts_exceeded' ? code : 'invalid_code';

/**
 * One-time codes other services ask for by member id and purpose (a points transfer's sender): the
 * same codes as sign-in (6 digits, single use, limited tries, the member's cooldown and hourly cap
 * over every purpose), committed, then mailed outside the transaction.
 */
export function memberCodes(deps: MemberAuthDeps) {
  return {
    async issue(
      d: { member_id: number; purpose: Purpose; context: Record<string, unknown> },
      meta: ServiceMeta,
      log: Logger,
    ) {
      const { sandbox, member, otp } = await withTransaction(deps.pool, async (db) => {
        const sandbox = await isSandbox(db, meta.tenant_id);
        const member = await findMemberBy(db, meta.tenant_id, { id: d.member_id }, true);
        if (!member) throw new AppError('member_not_found');
        requireEmail(member);
        const otp = await issueOtp(db, deps.otp, deps.clock, {
          tenantId: meta.tenant_id,
          memberId: member.id,
          purpose: d.purpose,
          context: d.context,
        });
        return { sandbox, member, otp };
      });
      await mailCode(deps, log, { tenantId: meta.tenant_id, sandbox }, member, otp.code, mailedAs[d.purpose], otp.id);
      return {
        member_id: member.id,
        expires_at: otp.expiresAt.toISOString(),
        expires_in_minutes: deps.otp.ttlMinutes,
        ...(sandbox ? { otp_code: otp.code } : {}),
      };
    },

    /**
     * Consume the member's newest code of the purpose. Under `meta.idempotency_key` (derived by the
     * caller from what the code authorises) a repeated verification with the same code answers what
     * the first did, so an operation interrupted after consuming its code can be retried.
     */
    async verify(d: { member_id: number; purpose: Purpose; code: string }, meta: ServiceMeta) {
      const replay = meta.idempotency_key && {
        tenantId: meta.tenant_id,
        key: `member-code:${meta.idempotency_key}`,
        operation: 'internal.member_otp.verify',
        data: d,
      };
      const stored = replay
        ? await deps.replays.find<{ member_id: number; context: Record<string, unknown> }>(replay)
        : undefined;
      if (stored) return stored;
      // A wrong try is committed before the failure is answered.
      const outcome = await withTransaction(deps.pool, async (db) => {
        const member = await findMemberBy(db, meta.tenant_id, { id: d.member_id });
        if (!member) return { reason: 'invalid_code' };
        const check = await checkOtp(db, deps.otp, deps.clock, member.id, d.purpose, d.code);
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
