import type { Clock, Logger, Pool } from '@loyalty/runtime';
import type { IdentityConfig } from './config.ts';
import { EarnMailSender } from './mail/earn-mails.ts';
import type { Mailer } from './mail/mailer.ts';

/**
 * What identity does on its own, in every replica: the earn-mail sender mails the points-earned
 * digests that are due (leased rows), outside any transaction, at the replica's notification pace.
 */
export function identityTasks(
  deps: { pool: Pool; clock: Clock; log: Logger; mailer: Mailer; pace: (() => Promise<void>) | undefined },
  config: Pick<IdentityConfig, 'EARN_MAIL_WINDOW_SECONDS' | 'EARN_MAIL_INTERVAL_MS' | 'MAIL_CONCURRENCY'>,
): { earnMailSender: EarnMailSender } {
  const { pool, clock, log, mailer, pace } = deps;
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
  };
}
