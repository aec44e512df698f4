import type { Clock, Logger, Metrics, Outbox, Pool } from '@loyalty/runtime';
import type { LedgerConfig } from './config.ts';
import type { Holds } from './lots/holds.ts';
import { LotSweeper } from './lots/sweeper.ts';
import type { LotEventSubjects } from './lots/store.ts';

/**
 * What the ledger does on its own, in every replica: the lot sweeper settles due accounts (lots
 * mature and expire), warns of coming expiries and releases holds that outlived their claim.
 */
export function ledgerTasks(
  deps: { pool: Pool; clock: Clock; log: Logger; metrics: Metrics; outbox: Outbox; holds: Holds },
  config: Pick<LedgerConfig, 'LOT_SWEEP_INTERVAL_MS' | 'LOT_SWEEP_BATCH'>,
  lotSubjects: (what: 'expired' | 'expiring') => LotEventSubjects,
): { lotSweeper: LotSweeper } {
  return {
    lotSweeper: new LotSweeper({
      ...deps,
      intervalMs: config.LOT_SWEEP_INTERVAL_MS,
      batch: config.LOT_SWEEP_BATCH,
      expired: lotSubjects('expired'),
      expiring: lotSubjects('expiring'),
    }),
  };
}
