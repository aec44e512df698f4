import type { Logger } from './logger.ts';

/**
 * Background work a replica repeats (expiring claims, finishing interrupted payments, purges):
 * one pass every `intervalMs`, never two at once, a failed pass logged and tried again at the next
 * tick. Safe in every replica only when the pass itself is (row locks with SKIP LOCKED, leases).
 */
export class PeriodicTask<T = unknown> {
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<unknown> = Promise.resolve();
  private stopped = true;

  constructor(private readonly opts: { name: string; intervalMs: number; run: () => Promise<T>; log: Logger }) {}

  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** Run a pass now (after the one in progress, if any) and answer its result. */
  async runNow(): Promise<T> {
    const pass = this.current.then(() => this.opts.run());
    this.current = pass.catch(() => undefined);
    return pass;
  }

  /** No new pass starts; the one in progress finishes. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.current;
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.current = this.runNow()
        .catch((err: Error) =>
          this.opts.log.warn({ err: err.message, task: this.opts.name }, 'periodic task failed; will retry'),
        )
        .finally(() => {
          if (!this.stopped) this.schedule();
        });
    }, this.opts.intervalMs);
  }
}
