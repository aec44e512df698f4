import { PeriodicTask, withTransaction, type Clock, type Logger, type Outbox, type Pool } from '@loyalty/runtime';
import { recordClaimEvent } from './events.ts';
import { expireDue, stalledApprovals } from './store/claim-requests.ts';

const BATCH = 200;

/**
 * Background work of every replica, safe to run in all of them at once:
 * - pending requests past expires_at become expired (one UPDATE over rows taken with
 *   FOR UPDATE SKIP LOCKED, with a claim_expired event per request in the same transaction);
 * - approvals stalled in `approving` (their process died after the ledger debit) are finished.
 */
export class ClaimSweeper {
  private readonly task: PeriodicTask<{ expired: number; resumed: number }>;
  private stopped = false;

  constructor(
    private readonly opts: {
      pool: Pool;
      outbox: Outbox;
      clock: Clock;
      log: Logger;
      intervalMs: number;
      resumeAfterMs: number;
      resume: (claim: { id: number; tenant_id: number }) => Promise<boolean>;
    },
  ) {
    this.task = new PeriodicTask({
      name: 'claim-sweep',
      intervalMs: opts.intervalMs,
      run: () => this.pass(),
      log: opts.log,
    });
  }

  /** Expire what is due (all of it, or just one request of a tenant); returns how many expired. */
  async expire(only?: { tenantId: number; id: number }): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await withTransaction(this.opts.pool, async (db) => {
        const now = this.opts.clock.now();
        const expired = await expireDue(db, now, BATCH, only);
        for (const claim of expired) await recordClaimEvent(db, this.opts.outbox, 'claim_expired', claim, now);
        return expired.length;
      });
      total += n;
      if (n < BATCH) break;
    }
    if (total > 0 && only === undefined) this.opts.log.info({ expired: total }, 'claim requests expired');
    return total;
  }

  /** One full pass now: expiry, then stalled approvals. */
  sweep(): Promise<{ expired: number; resumed: number }> {
    return this.task.runNow();
  }

  private async pass(): Promise<{ expired: number; resumed: number }> {
    const expired = await this.expire();
    const before = new Date(this.opts.clock.now().getTime() - this.opts.resumeAfterMs);
    let resumed = 0;
    for (const claim of await stalledApprovals(this.opts.pool, before, BATCH)) {
      if (this.stopped) break;
      if (await this.opts.resume(claim)) resumed++;
    }
    return { expired, resumed };
  }

  start(): void {
    this.task.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.task.stop();
  }
}
