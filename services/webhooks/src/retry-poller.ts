import type { Clock, Logger, Pool } from '@loyalty/runtime';
import type { Dispatcher } from './dispatcher.ts';
import { claimDue } from './store/deliveries.ts';

/**
 * Takes due deliveries from the database (retries, what did not fit a lane at intake, what a dead
 * replica's lease handed back) into this replica's dispatcher, as many as it has room for, oldest
 * due first. Every replica polls; FOR UPDATE SKIP LOCKED and the lease keep them from taking the
 * same delivery. A pass that filled its batch runs again at once, otherwise every `intervalMs`.
 */
export class RetryPoller {
  private stopped = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private moreDue = false;

  constructor(
    private readonly deps: {
      pool: Pool;
      clock: Clock;
      dispatcher: Dispatcher;
      log: Logger;
      intervalMs: number;
      leaseMs: number;
      batch?: number;
    },
  ) {}

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        let full = false;
        try {
          full = await this.pass();
        } catch (err) {
          this.deps.log.warn({ err: (err as Error).message }, 'taking due webhook deliveries failed; will retry');
        }
        this.moreDue = full;
        if (this.stopped) break;
        if (full && this.deps.dispatcher.freeCapacity() > 0) continue;
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, this.deps.intervalMs);
          this.wakeUp = () => (clearTimeout(t), resolve());
        });
        this.wakeUp = undefined;
      }
    })();
  }

  /** The dispatcher has room again: take more now if the last pass left due deliveries behind. */
  roomFreed(): void {
    if (this.moreDue) this.wakeUp?.();
  }

  /** One pass: answers whether it took a full batch (more may be due). */
  async pass(): Promise<boolean> {
    const room = this.deps.dispatcher.freeCapacity();
    if (room <= 0) return true;
    const limit = Math.min(room, this.deps.batch ?? 500);
    const now = this.deps.clock.now();
    const jobs = await claimDue(
      this.deps.pool,
      now,
      new Date(now.getTime() + this.deps.leaseMs),
      limit,
      this.deps.dispatcher.saturated(),
    );
    if (jobs.length > 0) this.deps.dispatcher.accept(jobs);
    return jobs.length === limit;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeUp?.();
    await this.loop;
  }
}
