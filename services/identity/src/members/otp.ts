import { AppError } from '@loyalty/contracts';
import type { Clock, PoolClient } from '@loyalty/runtime';
import { newOtpCode, otpHash, otpMatches } from '../domain/secrets.ts';
import {
  consumeOtp,
  insertOtp,
  latestOtpForUpdate,
  recentOtps,
  recordWrongAttempt,
  type CodeHolder,
} from '../store/otps.ts';

/** The code's HMAC is bound to its holder: a member's codes as before, a staff user's under `staff:`. */
function bindingOf(holder: CodeHolder): number | string {
  return 'memberId' in holder ? holder.memberId : `staff:${holder.staffId}`;
}

export interface OtpPolicy {
  secret: string;
  ttlMinutes: number;
  maxAttempts: number;
  cooldownSeconds: number;
  hourlyLimit: number;
}

/**
 * Issue a one-time code to a member. The caller holds the member's row lock, so the cooldown
 * and the hourly cap cannot be raced. A new code supersedes earlier ones of its purpose: only the
 * newest verifies. The cooldown and the hourly cap count the member's codes of every purpose
 * (sign-in and claim): each code is a mail to the member's inbox, and caps per purpose let a
 * caller send twice the mails by alternating purposes. The cooldown waits only on the newest
 * unused code: a code already used was read, so the next one (e.g. a claim code right after the
 * registration code) is no resend; the hourly cap still counts used codes.
 */
export async function issueOtp(
  db: PoolClient,
  policy: OtpPolicy,
  clock: Clock,
  target: CodeHolder & { tenantId: number; purpose: string; context?: Record<string, unknown> },
  /** The code, when it was made (and mailed) before this transaction: a registration's. */
  given?: string,
): Promise<{ code: string; expiresAt: Date; id: number }> {
  const now = clock.now();
  const holder: CodeHolder = 'memberId' in target ? { memberId: target.memberId } : { staffId: target.staffId };
  const recent = await recentOtps(db, holder, new Date(now.getTime() - 3_600_000));
  const last = recent.find((otp) => otp.consumed_at === null);
  if (last) {
    const readyAt = last.created_at.getTime() + policy.cooldownSeconds * 1000;
    if (readyAt > now.getTime()) {
      throw new AppError('otp_cooldown', undefined, {
        retry_after_seconds: Math.ceil((readyAt - now.getTime()) / 1000),
      });
    }
  }
  const oldest = recent.at(-1);
  if (oldest && recent.length >= policy.hourlyLimit) {
    const freeAt = oldest.created_at.getTime() + 3_600_000;
    throw new AppError('otp_hourly_limit', undefined, {
      retry_after_seconds: Math.max(1, Math.ceil((freeAt - now.getTime()) / 1000)),
    });
  }
  const code = given ?? newOtpCode();
  const expiresAt = new Date(now.getTime() + policy.ttlMinutes * 60_000);
  const otp = await insertOtp(db, {
    tenantId: target.tenantId,
    holder,
    purpose: target.purpose,
    codeHash: otpHash(policy.secret, bindingOf(holder), code),
    context: target.context ?? {},
    now,
    expiresAt,
  });
  return { code, expiresAt, id: otp.id };
}

export type OtpCheck = { ok: true; context: Record<string, unknown> } | { ok: false; error: AppError };

/**
 * Check a code against the member's newest code for the purpose and consume it when right.
 * A wrong try is counted (and committed by the caller even though the answer is a failure);
 * after `maxAttempts` wrong tries the code is dead, even for the right digits.
 */
export async function checkOtp(
  db: PoolClient,
  policy: OtpPolicy,
  clock: Clock,
  who: number | CodeHolder,
  purpose: string,
  code: string,
): Promise<OtpCheck> {
  const now = clock.now();
  const holder: CodeHolder = typeof who === 'number' ? { memberId: who } : who;
  const otp = await latestOtpForUpdate(db, holder, purpose);
  if (!otp || otp.consumed_at) return { ok: false, error: new AppError('invalid_otp') };
  if (otp.attempts >= policy.maxAttempts) return { ok: false, error: new AppError('otp_attempts_exceeded') };
  if (otp.expires_at.getTime() <= now.getTime()) return { ok: false, error: new AppError('otp_expired') };
  if (!otpMatches(policy.secret, bindingOf(holder), code, otp.code_hash)) {
    const attempts = await recordWrongAttempt(db, otp.id);
    return {
      ok: false,
      error: new AppError('invalid_otp', undefined, { attempts_remaining: Math.max(policy.maxAttempts - attempts, 0) }),
    };
  }
  if (!(await consumeOtp(db, otp.id, now))) return { ok: false, error: new AppError('invalid_otp') };
  return { ok: true, context: otp.context };
}
