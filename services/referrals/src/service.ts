import {
  ensureEventStream,
  EventConsumer,
  OutboxRelay,
  packageDir,
  pingEndpoint,
  runService,
  systemClock,
  type Clock,
  type Logger,
  type RunningService,
} from '@loyalty/runtime';
import { bonusPayments, startSweeper } from './bonus-payments.ts';
import type { ReferralsConfig } from './config.ts';
import { referralEndpoints } from './endpoints.ts';
import { peers } from './peers.ts';
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
    migrationsDir: packageDir(import.meta.url, '../migrations'),
    async setup({ pool, nc, subjects, log, metrics }) {
      await ensureEventStream(nc, subjects);
      const relay = new OutboxRelay({ pool, nc, schema: 'referrals', log, metrics });
      const deps = {
        pool,
        subjects,
        clock,
        log,
        peers: peers(nc, subjects, config.REQUEST_TIMEOUT_MS),
        eventsWritten: () => relay.wake(),
      };
      const payments = bonusPayments(deps);
      const programme = referralProgramme({ ...deps, payments });
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
      relay.start();
      await firstPurchase.start();
      const sweeper = startSweeper(
        () => payments.sweep(config.REFERRAL_PAYMENT_RETRY_AFTER_MS),
        config.REFERRAL_SWEEP_INTERVAL_MS,
        log,
      );
      return {
        endpoints: { ...referralEndpoints(programme), 'system.ping': pingEndpoint('referrals', SERVICE_VERSION) },
        stop: async () => {
          await sweeper.stop();
          await firstPurchase.stop();
          await relay.stop();
        },
      };
    },
  });
}
