import type { Logger } from './logger.ts';

export interface PeriodicTaskOptions<T> {
  /** Names the task in logs. */
  name: string;
  /** Pause between two passes (after a pass that left nothing more to do). */
  intervalMs: number;
  run: () => Promise<T>;
  log: Logger;
  /**
   * Whether a pass left more to do (it took a full batch): the next pass then starts at once
   * instead of after the interval. Without it every pass waits for the interval.
   */
  more?: (result: T) => boolean;
}

/**
 * Background work a replica repeats (expiring claims, mailing digests, polling due deliveries,
 * purges): a pass every `intervalMs`, never two at once, again at once while a pass says there is
 * more, and at once when woken (`wake`, coalesced: wakes during a pass make one more pass). A
 * failed pass is logged and tried again after the interval. Safe in every replica only when the
 * pass itself is (row locks with SKIP LOCKED, leases).
 */
export class PeriodicTask<T = unknown> {
  private current: Promise<unknown> = Promise.resolve();
  private loop: Promise<void> | undefined;
  private stopped = true;
  private woken = false;
  private timer: NodeJS.Timeout | undefined;
  private endPause: (() => void) | undefined;

  constructor(private readonly opts: PeriodicTaskOptions<T>) {}

  get name(): string {
    return this.opts.name;
  }

  start(): void {
    if (this.loop) return;
    this.stopped = false;
    this.loop = this.cycle();
  }

  /** Start the next pass now instead of after the pause (several wakes before it starts make one pass). */
  wake(): void {
    this.woken = true;
    this.endPause?.();
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
    this.endPause?.();
    await this.loop;
    this.loop = undefined;
    await this.current;
  }

  private async cycle(): Promise<void> {
    while (!this.stopped) {
      if (!this.woken) await this.pause();
      let more = true;
      while (more && !this.stopped) {
        this.woken = false;
        more = (await this.pass()) || this.woken;
      }
    }
  }

  /** One pass: whether to run another at once. */
  private async pass(): Promise<boolean> {
    try {
      const result = await this.runNow();
      return this.opts.more?.(result) ?? false;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.opts.log.warn({ err: message, task: this.opts.name }, 'periodic task failed; will retry');
      return false;
    }
  }

  private pause(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.endPause = () => {
        clearTimeout(this.timer);
        this.endPause = undefined;
        resolve();
      };
      this.timer = setTimeout(this.endPause, this.opts.intervalMs);
    });
  }
}
