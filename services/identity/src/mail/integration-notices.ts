import type { DomainEvent } from '@loyalty/contracts';
import { afterCommit, type Logger, type PoolClient } from '@loyalty/runtime';
import { mailText } from '../domain/mail-text.ts';
import type { MailQueue } from './notifications.ts';
import { enqueueMail } from '../store/outgoing-mails.ts';
import { findTenant } from '../store/tenants.ts';
import { renderFor, tenantMail } from './messages.ts';

/**
 * Mail to a tenant about its integration, driven by other services' events: today the webhooks
 * service's `endpoint_disabled` (every delivery to an endpoint failed for three days). It goes to
 * the tenant's contact email, or to the operator's address when the tenant has none; a sandbox
 * tenant's mail goes where all its mail goes (the sandbox server). The event consumer records the
 * event in the same transaction as the mail's outgoing row (sent after the commit), so a
 * redelivered event queues no second mail.
 */
export const integrationNoticeEvents = ['webhooks.endpoint_disabled'] as const;

export function integrationNoticeHandler(
  queue: MailQueue,
  consumer: string,
  operatorEmail: string | undefined,
  log: Logger,
) {
  return async (event: DomainEvent, db: PoolClient): Promise<void> => {
    if (event.type !== 'webhooks.endpoint_disabled') return;
    const tenant = await findTenant(db, event.tenant_id);
    if (!tenant) return;
    const to = tenant.contact_email ?? operatorEmail;
    if (!to) {
      log.warn(
        { event: event.id, tenant: tenant.id },
        'webhook endpoint disabled; no tenant contact and no OPERATOR_EMAIL to tell',
      );
      return;
    }
    const d = event.data;
    const t = (v: unknown, max: number) => mailText(v ?? '', max);
    const notice = await tenantMail(db, tenant.id);
    if (!notice) return;
    const mail = await renderFor(notice, 'endpoint_disabled', () => ({
      tenant_name: t(tenant.name, 100),
      tenant_id: String(tenant.id),
      endpoint_id: t(d.endpoint_id, 20),
      url: t(d.url, 300),
      failing_since: t(d.failing_since, 40),
      disabled_at: t(d.disabled_at, 40),
      last_error: t(d.last_error ?? 'unknown', 300),
    }));
    const queued = await enqueueMail(db, {
      tenantId: tenant.id,
      source: `${consumer}:${event.id}`,
      kind: 'notice',
      to,
      subject: mail.subject,
      body: mail.text,
      html: mail.html,
      sandbox: tenant.sandbox,
      now: queue.now(),
    });
    if (queued) afterCommit(db, queue.wake);
    log.info(
      { event: event.id, tenant: tenant.id, to_operator: !tenant.contact_email },
      'endpoint-disabled notice queued',
    );
  };
}
