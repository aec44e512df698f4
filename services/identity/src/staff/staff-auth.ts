import { AppError, type StaffCredentialsChanged, type StaffMeta } from '@loyalty/contracts';
import { withTransaction, type Logger, type PoolClient, type Queryable } from '@loyalty/runtime';
import { mailError } from '../mail/mailer.ts';
import { MAIL_NAME_MAX, mailText } from '../domain/mail-text.ts';
import { newStaffToken, sha256 } from '../domain/secrets.ts';
import { codeTenant, type MemberAuthDeps } from '../members/member-auth.ts';
import { renderFor } from '../mail/messages.ts';
import { checkOtp, issueOtp } from '../members/otp.ts';
import {
  findLiveStaffSession,
  findStaff,
  insertStaffSession,
  markSignedIn,
  revokeStaffSession,
  type StaffUser,
} from '../store/staff.ts';
import { withdrawOtp } from '../store/otps.ts';
import { findTenant } from '../store/tenants.ts';

export interface StaffAuthDeps extends MemberAuthDeps {
  staffTokenTtlMinutes: number;
  /**
   * Told after a staff session or user changed has committed: identity broadcasts it so every
   * gateway replica forgets the staff token it may have cached.
   */
  staffChanged?: (change: StaffCredentialsChanged) => void;
}

/** The one purpose of staff sign-in codes (members' codes are `login` and `claim`). */
const PURPOSE = 'staff';

/**
 * Staff sign-in: a one-time code mailed to the staff user (the same rules as members' codes: 6
 * digits, 10 minutes, single use, 5 wrong tries, cooldown and hourly cap per staff user), then an
 * opaque staff token (256 bits, stored as SHA-256, 12 hours by default). A gateway replica trusts
 * a token identity verified for a short TTL; a logout is broadcast after its commit and before its
 * answer, so it acts at once on every gateway replica.
 */
export function staffAuth(deps: StaffAuthDeps) {
  const generic = (minutes: number) => ({
    message: 'If this email belongs to a staff user of the tenant, a sign-in code was sent to it.',
    expires_in_minutes: minutes,
  });
  return {
    /** The same answer for an unknown tenant or email, so the form does not tell which emails are staff. */
    async requestCode(d: { tenant_id: number; email: string }, log: Logger) {
      const answer = generic(deps.otp.ttlMinutes);
      const issued = await withTransaction(deps.pool, async (db) => {
        const tenant = await findTenant(db, d.tenant_id);
        if (!tenant || tenant.status === 'inactive') return undefined;
        // The row lock makes the cooldown and the hourly cap race-free for this staff user.
        const staff = await findStaff(db, tenant.id, { email: d.email }, true);
        if (!staff || !staff.active) return undefined;
        const otp = await issueOtp(db, deps.otp, deps.clock, {
          tenantId: tenant.id,
          staffId: staff.id,
          purpose: PURPOSE,
        });
        return { tenant: { id: tenant.id, sandbox: tenant.sandbox }, staff, otp };
      });
      if (!issued) return answer;
      // Mailed after the commit, outside any transaction; withdrawn if the mail fails.
      await mailStaffCode(deps, log, issued.tenant, issued.staff, issued.otp);
      return { ...answer, ...(issued.tenant.sandbox ? { code: issued.otp.code } : {}) };
    },

    async verifyCode(d: { tenant_id: number; email: string; code: string }) {
      // A wrong try is committed before the failure is answered.
      const outcome = await withTransaction(deps.pool, async (db) => {
        if (await tenantInactive(db, d.tenant_id)) return { error: new AppError('tenant_inactive') };
        const staff = await findStaff(db, d.tenant_id, { email: d.email });
        if (!staff || !staff.active) return { error: new AppError('invalid_otp') };
        const check = await checkOtp(db, deps.otp, deps.clock, { staffId: staff.id }, PURPOSE, d.code);
        if (!check.ok) return { error: check.error };
        return openStaffSession(db, deps, staff);
      });
      if ('error' in outcome) throw outcome.error;
      return outcome;
    },

    async logout(meta: StaffMeta) {
      if (!(await revokeStaffSession(deps.pool, meta.session_id, meta.tenant_id, deps.clock.now())))
        throw new AppError('invalid_staff_token');
      deps.staffChanged?.({ tenant_id: meta.tenant_id, staff_session_id: meta.session_id });
      return { message: 'Signed out. The staff token no longer works.' };
    },

    async me(meta: StaffMeta) {
      const [staff, tenant] = await Promise.all([
        findStaff(deps.pool, meta.tenant_id, { id: meta.staff.id }),
        findTenant(deps.pool, meta.tenant_id),
      ]);
      if (!staff || !tenant) throw new AppError('invalid_staff_token');
      return { staff, tenant: { id: tenant.id, name: tenant.name, sandbox: tenant.sandbox } };
    },

    /** gateway -> identity: the staff user and tenant of a live token of an active staff user. */
    authenticate: (d: { staff_token: string }) => authenticateToken(deps, d.staff_token),
  };
}

/**
 * Mail a staff sign-in code, outside any transaction; the code was committed before, so when the
 * mail fails it is withdrawn (it counts for neither the cooldown nor the hourly cap).
 */
/** A staff token's live session; the console refuses a deactivated tenant's staff until it is reactivated. */
function liveSession<S extends { tenant_inactive: boolean }>(s: S | undefined): S {
  if (!s) throw new AppError('invalid_staff_token');
  if (s.tenant_inactive) throw new AppError('tenant_inactive');
  return s;
}

/** The staff user, tenant, session and its end of a live token (the gateway caches it until then at most). */
async function authenticateToken(deps: StaffAuthDeps, token: string) {
  const s = liveSession(await findLiveStaffSession(deps.pool, sha256(token), deps.clock.now()));
  const staff = { id: s.staff_id, role: s.role, email: s.email };
  return { tenant_id: s.tenant_id, staff, session_id: s.session_id, session_expires_at: s.expires_at.toISOString() };
}

/** Whether the operator deactivated the tenant (its staff cannot sign in). */
async function tenantInactive(db: Queryable, tenantId: number): Promise<boolean> {
  return (await findTenant(db, tenantId))?.status === 'inactive';
}

async function mailStaffCode(
  deps: StaffAuthDeps,
  log: Logger,
  tenant: { id: number; sandbox: boolean },
  staff: StaffUser,
  { code, id }: { code: string; id: number },
): Promise<void> {
  try {
    const t = await codeTenant(deps, tenant.id, tenant.sandbox);
    const mail = await renderFor(t, 'staff_code', (f) => ({
      name: mailText(staff.name, MAIL_NAME_MAX),
      code,
      minutes: f.number(deps.otp.ttlMinutes),
    }));
    await deps.mailer.sendAs(t, { to: staff.email, subject: mail.subject, text: mail.text, html: mail.html }, log);
  } catch (err) {
    log.error({ err: mailError(err) }, 'staff code mail failed');
    await withdrawOtp(deps.pool, id);
    throw new AppError('email_delivery_failed');
  }
}

/** A new staff token for the staff user, stored as its hash, and the user's sign-in time. */
async function openStaffSession(db: PoolClient, deps: StaffAuthDeps, staff: StaffUser) {
  const now = deps.clock.now();
  const token = newStaffToken();
  const expiresAt = new Date(now.getTime() + deps.staffTokenTtlMinutes * 60_000);
  await insertStaffSession(db, {
    tenantId: staff.tenant_id,
    staffId: staff.id,
    tokenHash: sha256(token),
    now,
    expiresAt,
  });
  const signedIn = await markSignedIn(db, staff.id, now);
  return {
    staff_token: token,
    expires_at: expiresAt.toISOString(),
    expires_in_minutes: deps.staffTokenTtlMinutes,
    staff: signedIn,
  };
}
