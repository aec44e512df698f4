import { memberMergeInternalOperations } from '@loyalty/contracts';
import { mergeReferrals } from './member-merge.ts';
import {
  packageDir,
  ReplayStore,
  runService,
  ServiceClient,
  type Clock,
  type Logger,
  type RunningService,
  type ServiceDeclaration,
  type ServiceRuntime,
} from '@loyalty/runtime';
import { bonusPayments } from './bonus-payments.ts';
import { referralsClients } from './clients.ts';
import type { ReferralsConfig } from './config.ts';
import { referralsConsumers } from './consumers.ts';
import { referralEndpoints } from './endpoints.ts';
import { referralsMemberData } from './member-data.ts';
import { staffView } from './staff-view.ts';
import { referralProgramme } from './referral-programme.ts';
import { referralsTasks } from './tasks.ts';

export const SERVICE_VERSION = '0.1.0';

export interface ReferralsHooks {
  /** Finish interrupted bonus payments now (it also runs every REFERRAL_SWEEP_INTERVAL_MS): how many completed. */
  sweepPayments(): Promise<number>;
}

export type RunningReferrals = RunningService<ReferralsHooks>;

/** Composition root: the referral endpoints, the first-purchase consumer and the payment sweeper. */
export function startReferrals(
  config: ReferralsConfig,
  opts: { log?: Logger; clock?: Clock } = {},
): Promise<RunningReferrals> {
  return runService(
    {
      name: 'referrals',
      version: SERVICE_VERSION,
      migrationsDir: packageDir(import.meta.url, '../migrations'),
      setup: (rt) => setupReferrals(rt, config),
    },
    { config, ...opts },
  );
}

async function setupReferrals(
  rt: ServiceRuntime,
  config: ReferralsConfig,
): Promise<ServiceDeclaration<ReferralsHooks>> {
  const { pool, nc, subjects, log, outbox, clock } = rt;
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
  const { paymentSweeper } = referralsTasks(payments, config, log);
  return {
    endpoints: referralEndpoints(programme, staffView(pool, programme), referralsMemberData(pool)).internal(
      memberMergeInternalOperations.referralsMerge,
      (d, x) => mergeReferrals(pool, d, x.meta),
    ),
    tenantData: [{ table: 'referrals' }, { table: 'referral_codes', key: 'card_id, member_id' }],
    consumers: referralsConsumers(rt, payments),
    tasks: [paymentSweeper],
    caches: [],
    hooks: { sweepPayments: () => paymentSweeper.runNow() },
  };
}
