import {
  EventConsumer,
  packageDir,
  PeriodicTask,
  ReplayStore,
  runService,
  ServiceClient,
  systemClock,
  type Clock,
  type Logger,
  type RunningService,
} from '@loyalty/runtime';
import { bonusPayments } from './bonus-payments.ts';
import { referralsClients } from './clients.ts';
import type { ReferralsConfig } from './config.ts';
import { referralEndpoints } from './endpoints.ts';
import { staffView } from './staff-view.ts';
import { referralProgramme } from './referral-programme.ts';

export const SERVICE_VERSION = '0.1.0';

/** Composition root: config -> connections -> endpoints -> shutdown. */
export async function startReferrals(
  config: ReferralsConfig,
  opts: { log?: Logger; clock?: Clock } = {},
): Promise<RunningService> {
  const clock = opts.clock ?? systemClock;
  return runService({
    name: 'referrals',
    version: SERVICE_VERSION,
    config,
    log: opts.log,
    clock: opts.clock,
    migrationsDir: packageDir(import.meta.url, '../migrations'),
    async setup({ pool, nc, subjects, log, metrics, outbox }) {
      const clients = referralsClients(new ServiceClient(nc, subjects, { timeoutMs: config.REQUEST_TIMEOUT_MS, log }));
      const payments = bonusPayments({ pool, clients, outbox, clock, log });
      const programme = referralProgramme({
        pool,
        clients,
        payments,
        outbox,
        replays: new ReplayStore(pool, 'referrals'),
        clock,
      });
      // First-purchase mode: the ledger's points earns make waiting referrals due.
      const firstPurchase = new EventConsumer({
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
      });
      await firstPurchase.start();
      const sweeper = new PeriodicTask({
        name: 'referral-payments',
        intervalMs: config.REFERRAL_SWEEP_INTERVAL_MS,
        run: () => payments.sweep(config.REFERRAL_PAYMENT_RETRY_AFTER_MS),
        log,
      });
      sweeper.start();
      return {
        endpoints: referralEndpoints(programme, staffView(pool, programme)),
        stop: async () => {
          await sweeper.stop();
          await firstPurchase.stop();
        },
      };
    },
  });
}
