import type { Clock, Logger, Metrics, Pool } from '@loyalty/runtime';
import type { IdentityConfig } from './config.ts';
import { EarnMailSender } from './mail/earn-mails.ts';
import type { Mailer } from './mail/mailer.ts';
import type { MarketingLinks } from './mail/marketing.ts';
import { OutgoingMailSender } from './mail/outgoing-mails.ts';

/**
 * What identity does on its own, in every replica, outside any transaction and at the replica's
 * notification pace: the earn-mail sender mails the points-earned digests that are due (leased
 * rows); the outgoing-mail sender mails what the notification and notice consumers recorded.
 */
export function identityTasks(
  deps: {
    pool: Pool;
    clock: Clock;
    log: Logger;
    metrics?: Metrics;
    mailer: Mailer;
    pace: (() => Promise<void>) | undefined;
    marketing: MarketingLinks;
  },
  config: Pick<IdentityConfig, 'EARN_MAIL_WINDOW_SECONDS' | 'EARN_MAIL_INTERVAL_MS' | 'MAIL_CONCURRENCY'>,
): { earnMailSender: EarnMailSender; outgoingMailSender: OutgoingMailSender } {
  const { pool, clock, log, metrics, mailer, pace, marketing } = deps;
  return {
    earnMailSender: new EarnMailSender({
      pool,
      clock,
      mailer,
      log,
      windowSeconds: config.EARN_MAIL_WINDOW_SECONDS,
      intervalMs: config.EARN_MAIL_INTERVAL_MS,
      concurrency: config.MAIL_CONCURRENCY,
      admit: pace,
    }),
    outgoingMailSender: new OutgoingMailSender({
      pool,
      clock,
      mailer,
      log,
      metrics,
      // Consumers wake it when they commit a mail; the interval only picks up retries and leases.
      intervalMs: config.EARN_MAIL_INTERVAL_MS,
      concurrency: config.MAIL_CONCURRENCY,
      admit: pace,
      marketing,
    }),
  };
}
