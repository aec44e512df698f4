import { EventConsumer, type ServicePart, type ServiceRuntime } from '@loyalty/runtime';
import type { bonusPayments } from './bonus-payments.ts';

/**
 * What the referrals service listens to: in first-purchase mode, the ledger's points earns make
 * waiting referrals due (earns that concern no waiting referral are acknowledged without a
 * transaction).
 */
export function referralsConsumers(rt: ServiceRuntime, payments: ReturnType<typeof bonusPayments>): ServicePart[] {
  const { nc, subjects, pool, log, metrics } = rt;
  return [
    new EventConsumer({
      nc,
      subjects,
      pool,
      schema: 'referrals',
      durable: 'referrals-first-purchase',
      filterSubject: subjects.event('ledger', 'points_earned'),
      log,
      metrics,
      handle: payments.onPointsEarned,
      relevant: payments.awaitPayment,
    }),
  ];
}
