import { isConnectionLost, type Logger, type Pool } from '@loyalty/runtime';
import { recordOutcomes, type Outcome } from './store/deliveries.ts';
import { errorParts } from './error-parts.ts';

/**
 * Group commit of attempt outcomes: outcomes recorded while `statements` statements are in flight
 * wait and go together in the next one (one round trip and one commit for up to `maxBatch`
 * deliveries, their attempt rows and their endpoints' failure streaks). With nothing in flight an
 * outcome goes at the end of the event-loop turn, with whatever else finished in that turn.
 *
 * A statement that fails is retried (a restarting database, a deadlock between replicas); an
 * outcome that is lost anyway (the process dies first) leaves its delivery leased, so it is sent
 * again when the lease ends: at least once, never lost.
 */
export class OutcomeLog {
  private waiting: Outcome[] = [];
  private inFlight = 0;
  private scheduled = false;
  private idle: (() => void)[] = [];

  constructor(
    private readonly pool: Pool,
    private readonly log: Logger,
    private readonly opts: { statements?: number; maxBatch?: number; retries?: number } = {},
  ) {}

  record(outcome: Outcome): void {
    this.waiting.push(outcome);
    this.schedule();
  }

  /** Resolves when everything recorded so far is written (or given up). */
  flushed(): Promise<void> {
    if (this.waiting.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  get backlog(): number {
    return this.waiting.length;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    const statements = this.opts.statements ?? 2;
    const maxBatch = this.opts.maxBatch ?? 500;
    while (this.waiting.length > 0 && this.inFlight < statements) {
      const batch = this.waiting.splice(0, maxBatch);
      this.inFlight++;
      void this.write(batch).finally(() => {
        this.inFlight--;
        if (this.waiting.length > 0) this.schedule();
        else if (this.inFlight === 0) this.idle.splice(0).forEach((wake) => wake());
      });
    }
  }

  private async write(batch: Outcome[]): Promise<void> {
    const retries = this.opts.retries ?? 5;
    for (let attempt = 0; ; attempt++) {
      try {
        await recordOutcomes(this.pool, batch);
        return;
      } catch (err) {
        if (attempt >= retries) {
          this.log.error(
            { err: errorParts(err).message, outcomes: batch.length },
            'delivery outcomes not written; those deliveries are sent again when their lease ends',
          );
          return;
        }
        const delay = Math.min(200 * 2 ** attempt, 5_000) * (isConnectionLost(err) ? 2 : 1);
        this.log.warn({ err: errorParts(err).message, attempt }, 'writing delivery outcomes failed; retrying');
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }
}
