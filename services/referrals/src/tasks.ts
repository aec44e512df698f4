import { PeriodicTask, type Logger } from '@loyalty/runtime';
import type { bonusPayments } from './bonus-payments.ts';
import type { ReferralsConfig } from './config.ts';

/**
 * What the referrals service does on its own, in every replica: the payment sweeper finishes bonus
 * payments left due by a crash or a failed call (leased, so replicas share them).
 */
export function referralsTasks(
  payments: ReturnType<typeof bonusPayments>,
  config: Pick<ReferralsConfig, 'REFERRAL_SWEEP_INTERVAL_MS' | 'REFERRAL_PAYMENT_RETRY_AFTER_MS'>,
  log: Logger,
): { paymentSweeper: PeriodicTask<number> } {
  return {
    paymentSweeper: new PeriodicTask({
      name: 'referral-payments',
      intervalMs: config.REFERRAL_SWEEP_INTERVAL_MS,
      run: () => payments.sweep(config.REFERRAL_PAYMENT_RETRY_AFTER_MS),
      log,
    }),
  };
}
