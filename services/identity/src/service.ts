import type { StaffCredentialsChanged } from '@loyalty/contracts';
import {
  addExportEndpoints,
  addImportEndpoints,
  importKind,
  Imports,
  jsonCodec,
  masterKey,
  packageDir,
  ReplayStore,
  runService,
  ServiceClient,
  type Clock,
  type Endpoints,
  type Logger,
  type RunningService,
  type ServiceDeclaration,
  type ServiceRuntime,
} from '@loyalty/runtime';
import { auditAnchorTask, auditLog } from './audit/audit-log.ts';
import { AuditKeyring } from './domain/audit-chain.ts';
import { staffAuth } from './staff/staff-auth.ts';
import { staffMembers } from './staff/staff-members.ts';
import { staffTeam } from './staff/staff-team.ts';
import { claimCodes } from './members/claim-codes.ts';
import { memberCodes } from './members/member-codes.ts';
import { identityTenantTables, tenantOffboarding } from './tenants/offboarding.ts';
import { memberDirectory } from './members/member-directory.ts';
import { ERASE_JOB, memberErasure } from './members/member-erasure.ts';
import { EXPORT_JOB, memberExport } from './members/member-export.ts';
import { MERGE_JOB, memberMerges } from './members/member-merge.ts';
import { memberConsents } from './members/consents.ts';
import { UnsubscribeTokens } from './domain/unsubscribe-token.ts';
import { MarketingLinks } from './mail/marketing.ts';
import { notificationPace } from './mail/notifications.ts';
import type { IdentityConfig } from './config.ts';
import { identityConsumers } from './consumers.ts';
import { identityEndpoints } from './endpoints.ts';
import { memberImportSpec } from './members/member-import.ts';
import { identityExports } from './members/members-export.ts';
import { Mailer } from './mail/mailer.ts';
import { SmtpSecrets } from './mail/smtp-secrets.ts';
import { staffMailSettings, tenantMailSettings } from './tenants/mail-settings.ts';
import { mailTemplates } from './tenants/mail-templates.ts';
import { memberLocale } from './members/member-locale.ts';
import { memberAuth } from './members/member-auth.ts';
import { provisioning } from './tenants/provisioning.ts';
import { identityTasks } from './tasks.ts';

export const SERVICE_VERSION = '0.1.0';

/** What identity's `credentials-changed` broadcast names: a member session, an app, or a staff session or user. */
type CredentialsChange = { tenant_id: number; session_id: number } | { app_id: string } | StaffCredentialsChanged;

export interface IdentityHooks {
  /** Mail every points-earned digest due now (it also runs every EARN_MAIL_INTERVAL_MS): how many were mailed. */
  sendEarnMails(): Promise<number>;
  /** Send every notification and notice mail due now (retries included): how many were sent. */
  sendMails(): Promise<number>;
  /** Anchor every audit chain head that moved now (it also runs every AUDIT_ANCHOR_INTERVAL_MS): how many were. */
  anchorAuditChains(): Promise<number>;
}

export type RunningIdentity = RunningService<IdentityHooks>;

/** Composition root: identity's endpoints, its mail and audit consumers and the mail senders. */
export function startIdentity(
  config: IdentityConfig,
  opts: { clock?: Clock; log?: Logger } = {},
): Promise<RunningIdentity> {
  return runService(
    {
      name: 'identity',
      version: SERVICE_VERSION,
      migrationsDir: packageDir(import.meta.url, '../migrations'),
      setup: (rt) => setupIdentity(rt, config),
    },
    { config, ...opts },
  );
}

/** The mailer, and the sealed SMTP passwords of tenants' own servers (rewrapped at start during a key rotation). */
async function mailOf(rt: ServiceRuntime, config: IdentityConfig) {
  const smtpSecrets = new SmtpSecrets(
    config.SECRETS_KEY && masterKey(config.SECRETS_KEY),
    config.SECRETS_KEY_PREVIOUS && masterKey(config.SECRETS_KEY_PREVIOUS),
  );
  await smtpSecrets.rewrap(rt.pool, rt.log);
  const mailer = new Mailer(
    config.SMTP_URL,
    config.SANDBOX_SMTP_URL,
    config.MAIL_FROM,
    rt.log,
    { connections: config.MAIL_CONCURRENCY },
    { pool: rt.pool, box: smtpSecrets },
  );
  return { smtpSecrets, mailer };
}

/** Members in (imports) and out (exports): their endpoints and their jobs. */
function memberFiles(rt: ServiceRuntime) {
  const now = () => rt.clock.now();
  const imports = new Imports(rt.pool, 'identity', rt.jobs, { members: importKind(memberImportSpec(now)) }, now);
  const exports = identityExports(rt);
  return {
    endpoints: (endpoints: Endpoints) => addExportEndpoints(addImportEndpoints(endpoints, imports), exports),
    handlers: () => ({ ...imports.handlers(), ...exports.handlers() }),
  };
}

async function setupIdentity(rt: ServiceRuntime, config: IdentityConfig): Promise<ServiceDeclaration<IdentityHooks>> {
  const { pool, nc, subjects, log, outbox, clock, metrics } = rt;
  const { smtpSecrets, mailer } = await mailOf(rt, config);
  // Tell every gateway replica to forget a member token whose session ended, a rotated or revoked
  // key, or a staff session or user that changed.
  const credentialsChanged = (change: CredentialsChange) =>
    nc.publish(subjects.credentialsChanged(), jsonCodec.encode(change));
  const rights = { ...memberData(rt, config, credentialsChanged), ...dataRightsOf(rt, config, credentialsChanged) };
  const authDeps = authDepsOf(rt, config, mailer, credentialsChanged);
  const keyring = new AuditKeyring(config.AUDIT_KEY, config.AUDIT_PREVIOUS_KEYS);
  const audit = auditLog({ pool, clock, log, keyring, outbox });
  const anchors = auditAnchorTask(audit, config.AUDIT_ANCHOR_INTERVAL_MS, log);
  // Member notifications and the earn digests share one pace per replica.
  const pace = notificationPace(config.MAIL_NOTIFICATIONS_PER_SECOND);
  const { marketing } = rights;
  const tasks = identityTasks({ pool, clock, log, metrics, mailer, pace, marketing }, config);
  const { earnMailSender, outgoingMailSender } = tasks;
  const mails = { now: () => clock.now(), wake: () => outgoingMailSender.wake(), marketing };
  const files = memberFiles(rt);
  return {
    endpoints: files.endpoints(
      identityEndpoints({
        auth: memberAuth(authDeps),
        admin: provisioning(pool, outbox, (appId) => credentialsChanged({ app_id: appId })),
        directory: memberDirectory(pool, outbox, clock),
        claims: claimCodes(authDeps),
        codes: memberCodes(authDeps),
        staff: staffAuth({
          ...authDeps,
          staffTokenTtlMinutes: config.STAFF_TOKEN_TTL_MINUTES,
          staffChanged: credentialsChanged,
        }),
        team: staffTeam({ pool, clock, outbox, replays: authDeps.replays, staffChanged: credentialsChanged }),
        members: staffMembers(pool),
        audit,
        ...rights,
        mail: tenantMailSettings({ pool, clock, outbox, secrets: smtpSecrets }),
        templates: mailTemplates({ pool, clock, outbox }),
        branding: staffMailSettings({ pool, clock, outbox }),
        locale: memberLocale({ pool, outbox }),
        pool,
      }),
    ),
    jobs: {
      [ERASE_JOB]: rights.erasure.run,
      [EXPORT_JOB]: rights.exports.run,
      [MERGE_JOB]: rights.merges.run,
      ...files.handlers(),
    },
    tenantData: identityTenantTables,
    consumers: identityConsumers(rt, config, { mails, audit }),
    tasks: [earnMailSender, outgoingMailSender, anchors],
    caches: [],
    purge: identityPurgeRules,
    hooks: {
      sendEarnMails: () => earnMailSender.sendDue(),
      sendMails: () => outgoingMailSender.sendDue(),
      anchorAuditChains: () => anchors.runNow(),
    },
    close: async () => mailer.close(),
  };
}

/** What member and staff sign-in share: mail, one-time codes, replays, sessions. */
function authDepsOf(
  rt: ServiceRuntime,
  config: IdentityConfig,
  mailer: Mailer,
  credentialsChanged: (change: { tenant_id: number; session_id: number }) => void,
) {
  const { pool, clock, outbox } = rt;
  return {
    pool,
    clock,
    mailer,
    replays: new ReplayStore(pool, 'identity'),
    tokenTtlMinutes: config.MEMBER_TOKEN_TTL_MINUTES,
    outbox,
    sessionEnded: (tenantId: number, sessionId: number) =>
      credentialsChanged({ tenant_id: tenantId, session_id: sessionId }),
    otp: {
      secret: config.OTP_SECRET,
      ttlMinutes: config.OTP_TTL_MINUTES,
      maxAttempts: config.OTP_MAX_ATTEMPTS,
      cooldownSeconds: config.OTP_RESEND_COOLDOWN_SECONDS,
      hourlyLimit: config.OTP_HOURLY_LIMIT,
    },
  };
}

/** Members' merges and tenants' offboarding: jobs that ask the other services for their parts. */
function dataRightsOf(
  rt: ServiceRuntime,
  config: IdentityConfig,
  credentialsChanged: (change: CredentialsChange) => void,
) {
  const { pool, clock, outbox, nc, subjects, log } = rt;
  const client = new ServiceClient(nc, subjects, { timeoutMs: config.MEMBER_DATA_TIMEOUT_MS, log });
  const merges = memberMerges({
    pool,
    clock,
    outbox,
    jobs: rt.jobs,
    client,
    sessionEnded: (tenantId, sessionId) => credentialsChanged({ tenant_id: tenantId, session_id: sessionId }),
    memberErased: (tenantId, memberId) =>
      nc.publish(subjects.membersChanged(), jsonCodec.encode({ tenant_id: tenantId, member_id: memberId })),
  });
  const offboarding = tenantOffboarding({
    pool,
    clock,
    outbox,
    client,
    jobs: rt.jobs,
    retentionDays: config.TENANT_PURGE_RETENTION_DAYS,
    appsChanged: (appIds) => appIds.forEach((appId) => credentialsChanged({ app_id: appId })),
    staffChanged: (tenantId, staffIds) =>
      staffIds.forEach((staffId) => credentialsChanged({ tenant_id: tenantId, staff_id: staffId })),
  });
  return { merges, offboarding };
}

/**
 * Members' data: erasures and exports (their jobs ask the other services; an erasure tells the
 * gateways and the ledger replicas at once), consents, and the unsubscribe links of marketing mail.
 */
function memberData(
  rt: ServiceRuntime,
  config: IdentityConfig,
  credentialsChanged: (change: { tenant_id: number; session_id: number }) => void,
) {
  const { pool, clock, outbox, nc, subjects, log } = rt;
  const client = new ServiceClient(nc, subjects, { timeoutMs: config.MEMBER_DATA_TIMEOUT_MS, log });
  const erasure = memberErasure({
    pool,
    clock,
    outbox,
    jobs: rt.jobs,
    client,
    sessionEnded: (tenantId, sessionId) => credentialsChanged({ tenant_id: tenantId, session_id: sessionId }),
    memberErased: (tenantId, memberId) =>
      nc.publish(subjects.membersChanged(), jsonCodec.encode({ tenant_id: tenantId, member_id: memberId })),
  });
  const tokens = new UnsubscribeTokens(config.OTP_SECRET);
  return {
    erasure,
    exports: memberExport({ pool, clock, jobs: rt.jobs, client }),
    consents: memberConsents({ pool, clock, outbox, tokens }),
    marketing: new MarketingLinks(config.PUBLIC_URL, tokens),
  };
}

/**
 * Dead codes and sessions, a day after they stopped working (a day to look into a complaint); the
 * hourly cap only reads the last hour's codes.
 */
const identityPurgeRules = [
  // Pages an export gathered, left by one that failed (a finished one deletes its own).
  { table: 'member_export_parts', expired: `created_at < $1::timestamptz - interval '1 day'` },
  { table: 'otps', expired: `expires_at < $1::timestamptz - interval '1 day'` },
  {
    table: 'member_sessions',
    expired: `expires_at < $1::timestamptz - interval '1 day' OR revoked_at < $1::timestamptz - interval '1 day'`,
  },
  {
    table: 'staff_sessions',
    expired: `expires_at < $1::timestamptz - interval '1 day' OR revoked_at < $1::timestamptz - interval '1 day'`,
  },
];
