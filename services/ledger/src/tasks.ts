import type { Clock, Logger, Metrics, Outbox, Pool } from '@loyalty/runtime';
import type { LedgerConfig } from './config.ts';
import type { Holds } from './lots/holds.ts';
import { LotSweeper } from './lots/sweeper.ts';
import type { LotEventSubjects } from './lots/store.ts';
import type { TierEventSubjects } from './tiers/review-store.ts';
import { TierSweeper } from './tiers/sweeper.ts';

/**
 * What the ledger does on its own, in every replica: the lot sweeper settles due accounts (lots
 * mature and expire), warns of coming expiries and releases holds that outlived their claim; the
 * tier sweeper reviews tiers whose validity ended and warns of coming downgrades (on the lot
 * sweep's interval and batch size).
 */
export function ledgerTasks(
  deps: { pool: Pool; clock: Clock; log: Logger; metrics: Metrics; outbox: Outbox; holds: Holds },
  config: Pick<LedgerConfig, 'LOT_SWEEP_INTERVAL_MS' | 'LOT_SWEEP_BATCH'>,
  lotSubjects: (what: 'expired' | 'expiring') => LotEventSubjects,
  tierSubjects: TierEventSubjects,
): { lotSweeper: LotSweeper; tierSweeper: TierSweeper } {
  return {
    tierSweeper: new TierSweeper({
      ...deps,
      intervalMs: config.LOT_SWEEP_INTERVAL_MS,
      batch: config.LOT_SWEEP_BATCH,
      subjects: tierSubjects,
    }),
    lotSweeper: new LotSweeper({
      ...deps,
      intervalMs: config.LOT_SWEEP_INTERVAL_MS,
      batch: config.LOT_SWEEP_BATCH,
      expired: lotSubjects('expired'),
      expiring: lotSubjects('expiring'),
    }),
  };
}
