import type { Subjects } from '@loyalty/contracts';
import { withTransaction, type Clock, type Logger, type Pool } from '@loyalty/runtime';
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
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly opts: {
      pool: Pool;
      subjects: Subjects;
      clock: Clock;
      log: Logger;
      intervalMs: number;
      resumeAfterMs: number;
      resume: (claim: { id: number; tenant_id: number }) => Promise<boolean>;
      published: () => void;
    },
  ) {}

  /** Expire what is due (all of it, or just request `onlyId`); returns how many expired. */
  async expire(onlyId?: number): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await withTransaction(this.opts.pool, async (db) => {
        const now = this.opts.clock.now();
        const expired = await expireDue(db, now, BATCH, onlyId);
        for (const claim of expired) await recordClaimEvent(db, this.opts.subjects, 'claim_expired', claim, now);
        return expired.length;
      });
      total += n;
      if (n < BATCH) break;
    }
    if (total > 0) {
      this.opts.published();
      if (onlyId === undefined) this.opts.log.info({ expired: total }, 'claim requests expired');
    }
    return total;
  }

  /** One full pass: expiry, then stalled approvals. */
  async sweep(): Promise<{ expired: number; resumed: number }> {
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
    const tick = () => {
      this.running = this.sweep()
        .catch((err: Error) => this.opts.log.warn({ err: err.message }, 'claim sweep failed; will retry'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.opts.intervalMs);
        });
    };
    this.timer = setTimeout(tick, this.opts.intervalMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
