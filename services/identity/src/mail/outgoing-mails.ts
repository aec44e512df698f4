import { PeriodicTask, type Clock, type Logger, type Metrics, type Pool } from '@loyalty/runtime';
import { mailError, type Mailer } from './mailer.ts';
import { tenantMail } from './messages.ts';
import type { MarketingLinks } from './marketing.ts';
import {
  countOutgoingMails,
  deleteMail,
  leaseDueMails,
  retryMail,
  type OutgoingMail,
} from '../store/outgoing-mails.ts';

/**
 * Sends the mail event consumers decided (`identity.outgoing_mails`): the consumers only record a
 * mail in their transaction, with the event's processed record, and this sender mails it after the
 * commit, outside any transaction. A slow or dead mail server then costs time, never database
 * connections. Safe in every replica: due rows are leased (SKIP LOCKED, then `LEASE_MS`), so each
 * mail is sent by one replica; a replica that dies between the SMTP answer and the delete leaves
 * the mail to be sent again after the lease (at least once, as the points-earned digests).
 */
export interface OutgoingMailOptions {
  pool: Pool;
  clock: Clock;
  mailer: Mailer;
  log: Logger;
  metrics?: Metrics;
  /** How often the sender looks for due mails (it is also woken when a consumer commits one). */
  intervalMs: number;
  /** Mails sent at once. */
  concurrency: number;
  /** The replica's notification pace, shared with the points-earned digests. */
  admit?: () => Promise<void>;
  /** Marketing mail: the consent checked again before it goes, and its unsubscribe headers. */
  marketing: MarketingLinks;
}

/** How long a sender owns the mails it took: longer than the slowest SMTP conversation it waits for. */
export const LEASE_MS = 5 * 60_000;
/** After a failed attempt: a minute, doubling up to an hour. */
const RETRY_BASE_MS = 60_000;
const RETRY_MAX_MS = 3_600_000;
/** A mail that could not be sent for this long is given up (logged as an error). */
export const GIVE_UP_MS = 3 * 24 * 3_600_000;

export function retryDelayMs(attempts: number): number {
  return Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** Math.max(0, attempts - 1));
}

export class OutgoingMailSender {
  private readonly task: PeriodicTask<{ taken: number; sent: number }>;

  constructor(private readonly o: OutgoingMailOptions) {
    this.task = new PeriodicTask({
      name: 'outgoing-mails',
      intervalMs: o.intervalMs,
      log: o.log,
      run: () => this.sendBatch(),
      more: ({ taken }) => taken >= this.batchSize,
    });
    o.metrics?.gauge('loyalty_outgoing_mails', 'Notification mails decided and not yet sent (identity)', () =>
      countOutgoingMails(o.pool),
    );
  }

  private get batchSize(): number {
    return this.o.concurrency * 4;
  }

  start(): void {
    this.task.start();
  }

  /** No mail is taken once stopping; mails on their way finish. */
  stop(): Promise<void> {
    return this.task.stop();
  }

  /** A consumer committed a mail: look at once instead of at the next tick. */
  wake(): void {
    this.task.wake();
  }

  /** Send every mail due now (after the pass in progress); returns how many were sent. */
  async sendDue(): Promise<number> {
    let sent = 0;
    for (;;) {
      const pass = await this.task.runNow();
      sent += pass.sent;
      if (pass.taken < this.batchSize) return sent;
    }
  }

  private async sendBatch(): Promise<{ taken: number; sent: number }> {
    const now = this.o.clock.now();
    const mails = await leaseDueMails(this.o.pool, now, new Date(now.getTime() + LEASE_MS), this.batchSize);
    const results = await Promise.all(mails.map((m) => this.send(m)));
    return { taken: mails.length, sent: results.filter(Boolean).length };
  }

  private async send(m: OutgoingMail): Promise<boolean> {
    const log = this.o.log.child({ tenant: m.tenant_id, mail: m.source, kind: m.kind });
    const tenantId = Number(m.tenant_id);
    const memberId = m.member_id === null ? undefined : Number(m.member_id);
    const marketing = m.category === 'marketing' && memberId !== undefined;
    if (marketing && !(await this.o.marketing.mayMail(this.o.pool, tenantId, memberId))) {
      // The consent was withdrawn (or the member erased) after the mail was decided: it does not go.
      await deleteMail(this.o.pool, m.id);
      log.info('marketing mail dropped: no consent any more');
      return false;
    }
    await this.o.admit?.();
    try {
      const headers = marketing ? { headers: this.o.marketing.headers(tenantId, memberId) } : {};
      const mail = {
        to: m.to_address,
        subject: m.subject,
        text: m.body,
        ...(m.html ? { html: m.html } : {}),
        ...headers,
      };
      // From, Reply-To and server as the tenant's settings are now (a deleted tenant's mail: the platform's).
      const tenant = await tenantMail(this.o.pool, tenantId);
      if (tenant) await this.o.mailer.sendAs({ ...tenant, sandbox: m.sandbox }, mail, log, 'notification');
      else await this.o.mailer.send(mail, m.sandbox, log, 'notification');
    } catch (err) {
      const now = this.o.clock.now();
      if (now.getTime() - m.created_at.getTime() >= GIVE_UP_MS) {
        log.error({ err: mailError(err), attempts: m.attempts }, 'mail given up after failing for three days');
        await deleteMail(this.o.pool, m.id);
        return false;
      }
      const retryAt = new Date(now.getTime() + retryDelayMs(m.attempts));
      log.warn({ err: mailError(err), attempts: m.attempts, retry_at: retryAt }, 'mail failed; retried later');
      await retryMail(this.o.pool, m.id, retryAt, mailError(err).slice(0, 500));
      return false;
    }
    await deleteMail(this.o.pool, m.id);
    log.info({ attempts: m.attempts }, `${m.kind} mailed`);
    return true;
  }
}
