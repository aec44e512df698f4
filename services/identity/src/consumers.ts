import { AUDIT_EVENT } from '@loyalty/contracts';
import { EventBatchConsumer, EventConsumer, type ServicePart, type ServiceRuntime } from '@loyalty/runtime';
import type { auditLog } from './audit/audit-log.ts';
import type { IdentityConfig } from './config.ts';
import { earnDigestHandler } from './mail/earn-mails.ts';
import { integrationNoticeEvents, integrationNoticeHandler } from './mail/integration-notices.ts';
import { notificationHandler, notifications as notificationKinds, type MailQueue } from './mail/notifications.ts';

/** The points-earned digests' durable: the name of the consumer that once mailed each earn. */
const EARN_DIGEST_CONSUMER = 'identity-mail-ledger-points_earned';

export interface IdentityConsumerDeps {
  /** Where notification and notice mails go: recorded with the event, sent after the commit. */
  mails: MailQueue;
  audit: ReturnType<typeof auditLog>;
}

/**
 * What identity listens to:
 * - points earned: added to their members' digests, a batch at a time (no mail here, so no pace;
 *   the earn-mail sender mails due digests). The durable keeps its name from when each earn was
 *   mailed, so an upgraded deployment does not replay old earns;
 * - member notifications: one durable consumer per event type that has a mail template; each
 *   records the mail in its transaction and the outgoing-mail sender sends it after the commit;
 * - the audit log: every service's audit events, appended to their tenant's hash chain in
 *   delivery order (one at a time; a tenant's appends are serialized by its head row anyway);
 * - integration notices: mail to a tenant (or the operator) about its integration, e.g. a webhook
 *   endpoint disabled (recorded the same way).
 */
export function identityConsumers(
  rt: ServiceRuntime,
  config: IdentityConfig,
  deps: IdentityConsumerDeps,
): ServicePart[] {
  const { nc, subjects, pool, log, metrics, clock } = rt;
  const base = { nc, subjects, pool, schema: 'identity', log, metrics };
  const eventsOf = (type: string) => `${subjects.root}.events.${type}`;
  const earnDigests = new EventBatchConsumer({
    nc,
    subjects,
    durable: EARN_DIGEST_CONSUMER,
    filterSubject: subjects.event('ledger', 'points_earned'),
    log,
    metrics,
    handle: earnDigestHandler({
      pool,
      clock,
      windowSeconds: config.EARN_MAIL_WINDOW_SECONDS,
      consumer: EARN_DIGEST_CONSUMER,
    }),
    // A few milliseconds gather many earns into one transaction and one acknowledgement write.
    lingerMs: 5,
  });
  const notifications = Object.keys(notificationKinds).map((type) => {
    const durable = `identity-mail-${type.replace('.', '-')}`;
    return new EventConsumer({
      ...base,
      durable,
      filterSubject: eventsOf(type),
      handle: notificationHandler(deps.mails, durable, log),
    });
  });
  const audit = new EventConsumer({
    ...base,
    durable: 'identity-audit-log',
    filterSubject: eventsOf(`*.${AUDIT_EVENT}`),
    handle: (event, db) => deps.audit.append(event, db),
  });
  const notices = integrationNoticeEvents.map((type) => {
    const durable = `identity-notice-${type.replace('.', '-')}`;
    return new EventConsumer({
      ...base,
      durable,
      filterSubject: eventsOf(type),
      handle: integrationNoticeHandler(deps.mails, durable, config.OPERATOR_EMAIL, log),
    });
  });
  return [...notifications, audit, ...notices, earnDigests];
}
