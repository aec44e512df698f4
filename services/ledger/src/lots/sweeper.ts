import {
  PeriodicTask,
  withTransaction,
  type Clock,
  type Logger,
  type Metrics,
  type Outbox,
  type Pool,
} from '@loyalty/runtime';
import type { Holds } from './holds.ts';
import { lockDueAccounts, settleAccounts, warnOfExpiries, type LotEventSubjects } from './store.ts';

export interface LotSweep {
  /** Lots whose remainder expired (one journal row each). */
  expired: number;
  /** Lots whose expiry the members were warned of. */
  warned: number;
  /** Holds released because they outlived their claim. */
  released: number;
}

/**
 * What time does to lots, in every replica at once: accounts whose next_change_at has
 * come are settled (pending lots mature, expired lots expire with their journal rows and events),
 * members are warned of coming expiries once per lot, and holds that outlived their claim are
 * released. Accounts and lots are taken with FOR UPDATE SKIP LOCKED, so replicas share the work and
 * never do it twice; every step is idempotent (a settled account is no longer due, a warned lot is
 * marked). Time comes from the injectable clock. Reads and debits settle an account themselves when
 * they find it due, so nothing waits for this task to be exact.
 */
export class LotSweeper {
  private readonly task: PeriodicTask<LotSweep>;
  private readonly expiredLots;
  private readonly warnedLots;

  constructor(
    private readonly opts: {
      pool: Pool;
      clock: Clock;
      log: Logger;
      metrics: Metrics;
      outbox: Outbox;
      holds: Holds;
      intervalMs: number;
      /** Accounts settled per transaction. */
      batch: number;
      expired: LotEventSubjects;
      expiring: LotEventSubjects;
    },
  ) {
    this.task = new PeriodicTask({
      name: 'lot-sweep',
      intervalMs: opts.intervalMs,
      run: () => this.pass(),
      log: opts.log,
    });
    this.expiredLots = opts.metrics.counter('loyalty_ledger_lots_expired_total', 'Lots whose remainder expired');
    this.warnedLots = opts.metrics.counter(
      'loyalty_ledger_lots_warned_total',
      'Lots whose coming expiry the member was told of',
    );
  }

  start(): void {
    this.task.start();
  }

  stop(): Promise<void> {
    return this.task.stop();
  }

  /** One whole pass now (after the one in progress): tests and benchmarks. */
  sweep(): Promise<LotSweep> {
    return this.task.runNow();
  }

  /** Settle every account that is due, a batch per transaction; answers the lots that expired. */
  async settleDue(): Promise<number> {
    let expired = 0;
    for (;;) {
      const { accounts, lots } = await withTransaction(this.opts.pool, async (db) => {
        const now = this.opts.clock.now();
        const keys = await lockDueAccounts(db, now, this.opts.batch);
        const settled = await settleAccounts(db, keys, now, this.opts.expired);
        if (settled.expiredLots > 0) this.opts.outbox.written(db);
        return { accounts: keys.length, lots: settled.expiredLots };
      });
      expired += lots;
      this.expiredLots.inc(lots);
      if (accounts < this.opts.batch) return expired;
    }
  }

  /** Warn of every expiry whose time has come, a batch of lots per transaction. */
  async warnDue(): Promise<number> {
    const batch = this.opts.batch * 4;
    let warned = 0;
    for (;;) {
      const n = await withTransaction(this.opts.pool, async (db) => {
        const lots = await warnOfExpiries(db, this.opts.clock.now(), batch, this.opts.expiring);
        if (lots > 0) this.opts.outbox.written(db);
        return lots;
      });
      warned += n;
      this.warnedLots.inc(n);
      if (n < batch) return warned;
    }
  }

  private async pass(): Promise<LotSweep> {
    const expired = await this.settleDue();
    const warned = await this.warnDue();
    const released = await this.opts.holds.releaseOverdue(this.opts.batch);
    if (expired + warned + released > 0) this.opts.log.info({ expired, warned, released }, 'lots swept');
    return { expired, warned, released };
  }
}
