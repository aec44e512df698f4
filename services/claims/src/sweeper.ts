import { PeriodicTask, withTransaction, type Clock, type Logger, type Outbox, type Pool } from '@loyalty/runtime';
import type { ClaimHolds } from './claim-holds.ts';
import { recordClaimEvent } from './events.ts';
import { expireDue, stalledApprovals, type ClaimRequest } from './store/claim-requests.ts';

export interface ClaimSweep {
  expired: number;
  resumed: number;
  /** Holds of rejected or expired requests given back. */
  released: number;
  /** Requests whose creation died before it finished, removed (their hold released). */
  abandoned: number;
}

const BATCH = 200;

/**
 * Background work of every replica, safe to run in all of them at once:
 * - pending requests past expires_at become expired (one UPDATE over rows taken with
 *   FOR UPDATE SKIP LOCKED, with a claim_expired event per request in the same transaction);
 * - approvals stalled in `approving` (their process died after the ledger debit) are finished;
 * - holds of rejected and expired requests that the ledger has not given back yet are released;
 * - requests left `holding` by a creation that died are removed, their hold released.
 */
export class ClaimSweeper {
  private readonly task: PeriodicTask<ClaimSweep>;
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
      holds: ClaimHolds;
    },
  ) {
    this.task = new PeriodicTask({
      name: 'claim-sweep',
      intervalMs: opts.intervalMs,
      run: () => this.pass(),
      log: opts.log,
    });
  }

  /** Expire what is due (all of it, or just one request of a tenant), releasing their holds; returns how many expired. */
  async expire(only?: { tenantId: number; id: number }): Promise<number> {
    let total = 0;
    for (;;) {
      const expired: ClaimRequest[] = await withTransaction(this.opts.pool, async (db) => {
        const now = this.opts.clock.now();
        const due = await expireDue(db, now, BATCH, only);
        for (const claim of due) await recordClaimEvent(db, this.opts.outbox, 'claim_expired', claim, now);
        return due;
      });
      for (const claim of expired) await this.opts.holds.releaseDecided(claim);
      total += expired.length;
      if (expired.length < BATCH) break;
    }
    if (total > 0 && only === undefined) this.opts.log.info({ expired: total }, 'claim requests expired');
    return total;
  }

  /** One full pass now: expiry, stalled approvals, holds to give back, abandoned creations. */
  sweep(): Promise<ClaimSweep> {
    return this.task.runNow();
  }

  private async pass(): Promise<ClaimSweep> {
    const expired = await this.expire();
    const before = new Date(this.opts.clock.now().getTime() - this.opts.resumeAfterMs);
    let resumed = 0;
    for (const claim of await stalledApprovals(this.opts.pool, before, BATCH)) {
      if (this.stopped) break;
      if (await this.opts.resume(claim)) resumed++;
    }
    const released = await this.opts.holds.releasePending(BATCH);
    const abandoned = await this.opts.holds.abandonStale(before, BATCH);
    if (released + abandoned > 0) this.opts.log.info({ released, abandoned }, 'claim holds settled');
    return { expired, resumed, released, abandoned };
  }

  start(): void {
    this.task.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.task.stop();
  }
}
