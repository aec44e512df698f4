import {
  PeriodicTask,
  withTransaction,
  type Clock,
  type Logger,
  type Metrics,
  type Outbox,
  type Pool,
} from '@loyalty/runtime';
import { reviewDueTiers, warnOfDowngrades, type TierEventSubjects } from './review-store.ts';

export interface TierSweep {
  renewed: number;
  downgraded: number;
  warned: number;
}

/**
 * What time does to tiers, in every replica at once: tiers whose validity ended are reviewed
 * (renewed or downgraded, with their events) and members are warned `warning_days` before a
 * review that would downgrade them. Rows are taken with FOR UPDATE SKIP LOCKED, so replicas share
 * the work, and each step changes what made the row due (a new valid_until, a cleared warn_at) in
 * the transaction that writes its event: each review and each warning happens exactly once. Time
 * comes from the injectable clock.
 */
export class TierSweeper {
  private readonly task: PeriodicTask<TierSweep>;
  private readonly reviews;
  private readonly warnings;

  constructor(
    private readonly opts: {
      pool: Pool;
      clock: Clock;
      log: Logger;
      metrics: Metrics;
      outbox: Outbox;
      intervalMs: number;
      /** Member tiers per transaction. */
      batch: number;
      subjects: TierEventSubjects;
    },
  ) {
    this.task = new PeriodicTask({
      name: 'tier-sweep',
      intervalMs: opts.intervalMs,
      run: () => this.pass(),
      log: opts.log,
    });
    this.reviews = opts.metrics.counter(
      'loyalty_ledger_tier_reviews_total',
      'Member tiers reviewed at the end of their validity',
    );
    this.warnings = opts.metrics.counter('loyalty_ledger_tier_warnings_total', 'Members warned of a coming downgrade');
  }

  start(): void {
    this.task.start();
  }

  stop(): Promise<void> {
    return this.task.stop();
  }

  /** One whole pass now (after the one in progress): tests. */
  sweep(): Promise<TierSweep> {
    return this.task.runNow();
  }

  private async pass(): Promise<TierSweep> {
    const out: TierSweep = { renewed: 0, downgraded: 0, warned: 0 };
    const { pool, clock, outbox, batch, subjects } = this.opts;
    for (;;) {
      const r = await withTransaction(pool, async (db) => {
        const done = await reviewDueTiers(db, clock.now(), batch, subjects);
        if (done.renewed + done.downgraded > 0) outbox.written(db);
        return done;
      });
      out.renewed += r.renewed;
      out.downgraded += r.downgraded;
      this.reviews.inc(r.renewed + r.downgraded);
      if (r.renewed + r.downgraded < batch) break;
    }
    for (;;) {
      const n = await withTransaction(pool, async (db) => {
        const w = await warnOfDowngrades(db, clock.now(), batch, subjects);
        if (w.warned > 0) outbox.written(db);
        return w;
      });
      out.warned += n.warned;
      this.warnings.inc(n.warned);
      if (n.considered < batch) break;
    }
    if (out.renewed + out.downgraded + out.warned > 0) this.opts.log.info(out, 'tiers swept');
    return out;
  }
}
