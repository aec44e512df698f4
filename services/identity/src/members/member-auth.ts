import { AppError, type AuthenticateReply, type Meta } from '@loyalty/contracts';
import {
  withTransaction,
  type Clock,
  type Logger,
  type Outbox,
  type Pool,
  type PoolClient,
  type Queryable,
  type ReplayStore,
} from '@loyalty/runtime';
import { MAIL_NAME_MAX, mailText } from '../domain/mail-text.ts';
import { maskEmail, maskPhone } from '../domain/masking.ts';
import { matchesHash, newMemberToken, sha256 } from '../domain/secrets.ts';
import { mailError, type Mailer } from '../mail/mailer.ts';
import { renderFor, tenantMail, type TenantMail } from '../mail/messages.ts';
import { isLocale, phrases, type Locale } from '../mail/render/index.ts';
import { recordMemberRegistered } from '../events.ts';
import { checkOtp, issueOtp, type OtpPolicy } from './otp.ts';
import { findCredentials } from '../store/apps.ts';
import { withdrawOtp } from '../store/otps.ts';
import { newOtpCode } from '../domain/secrets.ts';
import { findMemberBy, insertMember, memberLocales, type Member } from '../store/members.ts';
import { findLiveSession, insertSession, revokeSession } from '../store/sessions.ts';
import { findTenant } from '../store/tenants.ts';

const REGISTRATION_ENDPOINT = '/api/v1/auth/member/register';

export interface MemberAuthDeps {
  pool: Pool;
  clock: Clock;
  otp: OtpPolicy;
  mailer: Mailer;
  replays: ReplayStore;
  tokenTtlMinutes: number;
  /** identity's outbox: `member_registered` goes out with the member's row. */
  outbox: Outbox;
  /**
   * Told after a session is revoked (logout, refresh) has committed: identity broadcasts it so
   * every gateway replica forgets the member token it may have cached.
   */
  sessionEnded?: (tenantId: number, sessionId: number) => void;
}

/** Absent contact data is `null` (never `""`): a member created by phone only has no email. */
const masked = (m: Member) => ({ email: maskEmail(m.email) ?? null, phone: maskPhone(m.phone) });

function memberNotFound(): AppError {
  return new AppError('member_not_found', undefined, {
    requires_registration: true,
    registration_endpoint: REGISTRATION_ENDPOINT,
  });
}

/**
 * Whether the tenant is a sandbox, from identity's own record of it: never from the request's
 * `meta` (whoever reaches NATS could claim `sandbox: true` and get live members' codes back).
 * A tenant identity does not know is `tenant_not_found`, never a code.
 */
export async function isSandbox(db: Queryable, tenantId: number): Promise<boolean> {
  const tenant = await findTenant(db, tenantId);
  if (!tenant) throw new AppError('tenant_not_found');
  return tenant.sandbox;
}

/** A code goes by mail: a member without an email address cannot get one (checked before it is issued). */
export function requireEmail(member: Pick<Member, 'email'>): string {
  if (!member.email)
    throw new AppError('validation_error', 'The member has no email address.', {
      fields: [{ field: 'email', message: 'member has no email' }],
    });
  return member.email;
}

/**
 * Mail a one-time code, outside any transaction (no SMTP conversation holds a database connection).
 * The code was committed before: when the mail fails it is withdrawn (`withdraw`, so it counts for
 * neither the cooldown nor the hourly cap) and the caller is answered `email_delivery_failed`.
 */
export async function mailCode(
  deps: Pick<MemberAuthDeps, 'mailer' | 'otp' | 'pool'>,
  log: Logger,
  tenant: { tenantId: number; sandbox: boolean },
  member: Pick<Member, 'name' | 'email'> & { id?: number; locale?: Locale | undefined },
  code: string,
  purpose: 'sign-in' | 'claim verification' | 'transfer verification',
  otpId?: number,
): Promise<void> {
  const to = requireEmail(member);
  try {
    const t = await codeTenant(deps, tenant.tenantId, tenant.sandbox);
    // The member's language: given at registration, else stored (else the tenant's default).
    const stored =
      member.id === undefined ? undefined : (await memberLocales(deps.pool, t.tenantId, [member.id])).get(member.id);
    const locale = member.locale ?? (isLocale(stored) ? stored : undefined);
    const mail = await renderFor(
      t,
      'member_code',
      (f, l) => ({
        name: mailText(member.name, MAIL_NAME_MAX),
        code,
        purpose: phrases[l].purpose[purpose],
        minutes: f.number(deps.otp.ttlMinutes),
      }),
      { locale },
    );
    await deps.mailer.sendAs(t, { to, subject: mail.subject, text: mail.text, html: mail.html }, log);
  } catch (err) {
    log.error({ err: mailError(err) }, 'otp mail failed');
    if (otpId !== undefined) await withdrawOtp(deps.pool, otpId);
    throw new AppError('email_delivery_failed');
  }
}

/** The tenant a code's mail is written for (member or staff), its sandbox flag as the caller read it. */
export async function codeTenant(
  deps: Pick<MemberAuthDeps, 'pool'>,
  tenantId: number,
  sandbox: boolean,
): Promise<TenantMail> {
  const tenant = await tenantMail(deps.pool, tenantId);
  if (!tenant) throw new AppError('tenant_not_found');
  return { ...tenant, sandbox };
}

/** Member sign-in and its sessions: registration and codes, then tokens checked on every call. */
export function memberAuth(deps: MemberAuthDeps) {
  return { ...registration(deps), ...sessions(deps) };
}

/** Registration and sign-in codes. */
function registration(deps: MemberAuthDeps) {
  return {
    async check(data: { email?: string; phone?: string }, meta: Meta) {
      const member = await findMemberBy(
        deps.pool,
        meta.tenant_id,
        data.email !== undefined ? { email: data.email } : { phone: data.phone },
      );
      if (!member) return { exists: false as const, registration_endpoint: REGISTRATION_ENDPOINT };
      return { exists: true as const, is_active: member.is_active, member: masked(member) };
    },
    register: (data: RegisterData, meta: Meta, log: Logger) => register(deps, data, meta, log),
    requestOtp: (data: { email: string }, meta: Meta, log: Logger) => requestSignInCode(deps, data, meta, log),
  };
}

type RegisterData = { name: string; email: string; phone: string; accepts_emails?: boolean; locale?: Locale };

/**
 * The code is mailed before the member is written (no SMTP conversation inside the transaction):
 * a mail that fails registers nothing, as before. An email or phone already taken is refused
 * before any mail; a registration that races another one for them gets its 409 from the insert,
 * after a mail whose code then works for nothing.
 */
async function register(deps: MemberAuthDeps, data: RegisterData, meta: Meta, log: Logger): Promise<RegisterReply> {
  // The key is held (committed as in progress) before anything is checked or mailed: a retry sent
  // while this attempt still runs (its gateway gave up waiting) is answered 409
  // idempotency_in_progress and retried, instead of finding the email taken by this very attempt.
  const key = meta.idempotency_key
    ? { tenantId: meta.tenant_id, key: meta.idempotency_key, operation: 'member.register', data }
    : undefined;
  return deps.replays.steps(key, async () => {
    const sandbox = await isSandbox(deps.pool, meta.tenant_id);
    await refuseTaken(deps.pool, meta.tenant_id, data);
    const code = newOtpCode();
    await mailCode(deps, log, { tenantId: meta.tenant_id, sandbox }, data, code, 'sign-in');
    return withTransaction(deps.pool, async (db): Promise<RegisterReply> => {
      const member = await insertMember(db, {
        tenantId: meta.tenant_id,
        name: data.name,
        email: data.email,
        phone: data.phone,
        acceptsEmails: data.accepts_emails ?? false,
        locale: data.locale,
      });
      await recordMemberRegistered(db, deps.outbox, member, 'registration', deps.clock.now());
      const holder = { tenantId: member.tenant_id, memberId: member.id, purpose: 'login' };
      await issueOtp(db, deps.otp, deps.clock, holder, code);
      const reply: RegisterReply = {
        message: 'Member registered. A one-time code was sent by email.',
        member: { id: member.id, name: member.name, ...masked(member) },
        otp_expires_in_minutes: deps.otp.ttlMinutes,
        ...(sandbox ? { otp_code: code } : {}),
      };
      if (key) await deps.replays.save(db, key, reply);
      return reply;
    });
  });
}

/** The code is committed, then mailed outside the transaction (withdrawn if the mail fails). */
async function requestSignInCode(deps: MemberAuthDeps, data: { email: string }, meta: Meta, log: Logger) {
  const { sandbox, member, otp } = await withTransaction(deps.pool, async (db) => {
    const sandbox = await isSandbox(db, meta.tenant_id);
    const member = await findMemberBy(db, meta.tenant_id, { email: data.email }, true);
    if (!member) throw memberNotFound();
    if (!member.is_active) throw new AppError('member_inactive');
    requireEmail(member);
    const otp = await issueOtp(db, deps.otp, deps.clock, {
      tenantId: member.tenant_id,
      memberId: member.id,
      purpose: 'login',
    });
    return { sandbox, member, otp };
  });
  await mailCode(deps, log, { tenantId: meta.tenant_id, sandbox }, member, otp.code, 'sign-in', otp.id);
  return {
    message: 'A one-time code was sent by email.',
    expires_in_minutes: deps.otp.ttlMinutes,
    member: masked(member),
    ...(sandbox ? { otp_code: otp.code } : {}),
  };
}

type RegisterReply = {
  message: string;
  member: { id: number; name: string; email: string | null; phone: string | null };
  otp_expires_in_minutes: number;
  otp_code?: string;
};

/** A registration's email or phone that a member of the tenant has already: the 409 the insert would answer. */
async function refuseTaken(db: Queryable, tenantId: number, data: { email: string; phone: string }): Promise<void> {
  if (await findMemberBy(db, tenantId, { email: data.email }))
    throw new AppError('email_taken', undefined, { field: 'email' });
  if (await findMemberBy(db, tenantId, { phone: data.phone }))
    throw new AppError('phone_taken', undefined, { field: 'phone' });
}

/** Member tokens: opened by a code, rotated, revoked, and resolved for the gateway. */
function sessions(deps: MemberAuthDeps) {
  /** The session the request's member token opened; a request without one has no session to end. */
  const sessionOf = (meta: Meta): number => {
    if (meta.session_id === undefined) throw new AppError('invalid_member_token');
    return meta.session_id;
  };
  return {
    async verifyOtp(data: { email: string; code: string }, meta: Meta) {
      // A wrong try must be counted even though the answer is a failure: commit, then throw.
      const outcome = await withTransaction(deps.pool, async (db) => {
        const member = await findMemberBy(db, meta.tenant_id, { email: data.email });
        if (!member) return { error: memberNotFound() };
        const check = await checkOtp(db, deps.otp, deps.clock, member.id, 'login', data.code);
        if (!check.ok) return { error: check.error };
        const session = await openSession(db, deps, meta.tenant_id, member.id);
        return { session, member };
      });
      if ('error' in outcome) throw outcome.error;
      const { session, member } = outcome;
      return { ...session, member: { id: member.id, ...masked(member), name: member.name } };
    },

    async refresh(meta: Meta) {
      const sessionId = sessionOf(meta);
      const session = await withTransaction(deps.pool, async (db) => {
        const memberId = await revokeSession(db, sessionId, meta.tenant_id, deps.clock.now());
        if (memberId === undefined) throw new AppError('invalid_member_token');
        return openSession(db, deps, meta.tenant_id, memberId);
      });
      deps.sessionEnded?.(meta.tenant_id, sessionId);
      return session;
    },

    async logout(meta: Meta) {
      const sessionId = sessionOf(meta);
      const memberId = await revokeSession(deps.pool, sessionId, meta.tenant_id, deps.clock.now());
      if (memberId === undefined) throw new AppError('invalid_member_token');
      deps.sessionEnded?.(meta.tenant_id, sessionId);
      return { message: 'Logged out. The member token no longer works.' };
    },

    authenticate: (data: { app_id: string; api_key: string; member_token?: string }) => authenticate(deps, data),
  };
}

/** Resolve app credentials, and a member token when one is presented (gateway -> identity). */
async function authenticate(
  deps: MemberAuthDeps,
  data: { app_id: string; api_key: string; member_token?: string },
): Promise<AuthenticateReply> {
  const creds = await findCredentials(deps.pool, data.app_id);
  // Hash even for an unknown app so the answer takes the same time either way.
  const ok = creds ? matchesHash(data.api_key, creds.key_hash) : matchesHash(data.api_key, Buffer.alloc(32)) && false;
  if (!creds || !ok || creds.revoked) throw new AppError('invalid_credentials');
  if (creds.tenant_inactive) throw new AppError('tenant_inactive');
  const reply: AuthenticateReply = {
    tenant_id: creds.tenant_id,
    app_id: data.app_id,
    sandbox: creds.sandbox,
    scopes: creds.scopes,
  };
  if (data.member_token !== undefined) {
    const session = await findLiveSession(deps.pool, creds.tenant_id, sha256(data.member_token), deps.clock.now());
    if (!session) throw new AppError('invalid_member_token');
    reply.member_id = session.member_id;
    reply.session_id = session.id;
    reply.session_expires_at = session.expires_at.toISOString();
  }
  return reply;
}

async function openSession(db: PoolClient, deps: MemberAuthDeps, tenantId: number, memberId: number) {
  const now = deps.clock.now();
  const token = newMemberToken();
  const expiresAt = new Date(now.getTime() + deps.tokenTtlMinutes * 60_000);
  await insertSession(db, { tenantId, memberId, tokenHash: sha256(token), now, expiresAt });
  return { member_token: token, expires_at: expiresAt.toISOString(), expires_in_minutes: deps.tokenTtlMinutes };
}
