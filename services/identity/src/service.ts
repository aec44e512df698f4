import {
  EventBatchConsumer,
  EventConsumer,
  jsonCodec,
  packageDir,
  ReplayStore,
  runService,
  systemClock,
  type Clock,
  type Logger,
  type RunningService,
} from '@loyalty/runtime';
import { AUDIT_EVENT, type ServiceName } from '@loyalty/contracts';
import { auditLog } from './audit/audit-log.ts';
import { staffAuth } from './staff/staff-auth.ts';
import { staffMembers } from './staff/staff-members.ts';
import { staffTeam } from './staff/staff-team.ts';
import { claimCodes } from './members/claim-codes.ts';
import { memberDirectory } from './members/member-directory.ts';
import { integrationNoticeEvents, integrationNoticeHandler } from './mail/integration-notices.ts';
import { notificationHandler, notificationPace, templates } from './mail/notifications.ts';
import { earnDigestHandler, EarnMailSender } from './mail/earn-mails.ts';
import type { IdentityConfig } from './config.ts';
import { identityEndpoints } from './endpoints.ts';
import { Mailer } from './mail/mailer.ts';
import { memberAuth } from './members/member-auth.ts';
import { provisioning } from './tenants/provisioning.ts';

export const SERVICE_VERSION = '0.1.0';

/** The points-earned digests' durable: the name of the consumer that once mailed each earn. */
const EARN_DIGEST_CONSUMER = 'identity-mail-ledger-points_earned';

/** Composition root: config -> connections -> endpoints -> shutdown. */
export async function startIdentity(
  config: IdentityConfig,
  opts: { clock?: Clock; log?: Logger } = {},
): Promise<RunningService> {
  return runService({
    name: 'identity',
    version: SERVICE_VERSION,
    config,
    log: opts.log,
    clock: opts.clock,
    migrationsDir: packageDir(import.meta.url, '../migrations'),
    async setup({ pool, nc, subjects, log, metrics, outbox }) {
      const mailer = new Mailer(config.SMTP_URL, config.SANDBOX_SMTP_URL, config.MAIL_FROM, log, {
        connections: config.MAIL_CONCURRENCY,
      });
      const authDeps = {
        pool,
        clock: opts.clock ?? systemClock,
        mailer,
        replays: new ReplayStore(pool, 'identity'),
        tokenTtlMinutes: config.MEMBER_TOKEN_TTL_MINUTES,
        outbox,
        // Tell every gateway replica to forget a member token whose session ended.
        sessionEnded: (tenantId: number, sessionId: number) =>
          nc.publish(subjects.credentialsChanged(), jsonCodec.encode({ tenant_id: tenantId, session_id: sessionId })),
        otp: {
          secret: config.OTP_SECRET,
          ttlMinutes: config.OTP_TTL_MINUTES,
          maxAttempts: config.OTP_MAX_ATTEMPTS,
          cooldownSeconds: config.OTP_RESEND_COOLDOWN_SECONDS,
          hourlyLimit: config.OTP_HOURLY_LIMIT,
        },
      };
      const auth = memberAuth(authDeps);
      // Tell every gateway replica to forget a rotated or revoked key.
      const admin = provisioning(pool, outbox, (appId) =>
        nc.publish(subjects.credentialsChanged(), jsonCodec.encode({ app_id: appId })),
      );
      // Member notifications: one durable consumer per event type that has a mail template.
      const pace = notificationPace(config.MAIL_NOTIFICATIONS_PER_SECOND);
      // Points earned: the consumer only adds earns to their members' digests, a batch at a time (no
      // mail, so no pace); the sender mails due digests outside any transaction. The durable keeps
      // its name from when each earn was mailed, so an upgraded deployment does not replay old earns.
      const earnMails = new EarnMailSender({
        pool,
        clock: opts.clock ?? systemClock,
        mailer,
        log,
        windowSeconds: config.EARN_MAIL_WINDOW_SECONDS,
        intervalMs: config.EARN_MAIL_INTERVAL_MS,
        concurrency: config.MAIL_CONCURRENCY,
        admit: pace,
      });
      const earnDigests = new EventBatchConsumer({
        nc,
        subjects,
        durable: EARN_DIGEST_CONSUMER,
        filterSubject: subjects.event('ledger', 'points_earned'),
        log,
        metrics,
        handle: earnDigestHandler({
          pool,
          clock: opts.clock ?? systemClock,
          windowSeconds: config.EARN_MAIL_WINDOW_SECONDS,
          consumer: EARN_DIGEST_CONSUMER,
        }),
        // A few milliseconds gather many earns into one transaction and one acknowledgement write.
        lingerMs: 5,
      });
      const consumers = Object.keys(templates).map((type) => {
        const [service, event] = type.split('.') as [ServiceName, string];
        return new EventConsumer({
          nc,
          subjects,
          pool,
          schema: 'identity',
          durable: `identity-mail-${type.replace('.', '-')}`,
          filterSubject: subjects.event(service, event),
          log,
          metrics,
          handle: notificationHandler(mailer, log),
          // Mails wait on the mail server, not on the CPU: several at once over pooled connections.
          concurrency: config.MAIL_CONCURRENCY,
          admit: pace,
        });
      });
      // The audit log: every service's audit events, appended to their tenant's hash chain in
      // delivery order (one at a time; a tenant's appends are serialized by its head row anyway).
      const audit = auditLog({ pool, clock: authDeps.clock, log });
      consumers.push(
        new EventConsumer({
          nc,
          subjects,
          pool,
          schema: 'identity',
          durable: 'identity-audit-log',
          filterSubject: `${subjects.root}.events.*.${AUDIT_EVENT}`,
          log,
          metrics,
          handle: (event, db) => audit.append(event, db),
        }),
      );
      // Mail to a tenant (or the operator) about its integration, e.g. a webhook endpoint disabled.
      const noticeHandler = integrationNoticeHandler(mailer, config.OPERATOR_EMAIL, log);
      for (const type of integrationNoticeEvents) {
        const [service, event] = type.split('.') as [ServiceName, string];
        consumers.push(
          new EventConsumer({
            nc,
            subjects,
            pool,
            schema: 'identity',
            durable: `identity-notice-${type.replace('.', '-')}`,
            filterSubject: subjects.event(service, event),
            log,
            metrics,
            handle: noticeHandler,
          }),
        );
      }
      for (const c of consumers) await c.start();
      await earnDigests.start();
      earnMails.start();
      return {
        endpoints: identityEndpoints({
          auth,
          admin,
          directory: memberDirectory(pool, outbox, authDeps.clock),
          claims: claimCodes(authDeps),
          staff: staffAuth({ ...authDeps, staffTokenTtlMinutes: config.STAFF_TOKEN_TTL_MINUTES }),
          team: staffTeam({ pool, clock: authDeps.clock, outbox, replays: authDeps.replays }),
          members: staffMembers(pool),
          audit,
        }),
        // Dead codes and sessions, a day after they stopped working (a day to look into a
        // complaint); the hourly cap only reads the last hour's codes.
        purge: [
          { table: 'otps', expired: `expires_at < $1::timestamptz - interval '1 day'` },
          {
            table: 'member_sessions',
            expired: `expires_at < $1::timestamptz - interval '1 day' OR revoked_at < $1::timestamptz - interval '1 day'`,
          },
          {
            table: 'staff_sessions',
            expired: `expires_at < $1::timestamptz - interval '1 day' OR revoked_at < $1::timestamptz - interval '1 day'`,
          },
        ],
        stop: async () => {
          for (const c of consumers) await c.stop();
          await earnDigests.stop();
          await earnMails.stop();
          mailer.close();
        },
      };
    },
  });
}
