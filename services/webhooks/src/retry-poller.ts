import { PeriodicTask, type Clock, type Logger, type Pool } from '@loyalty/runtime';
import type { Dispatcher } from './dispatcher.ts';
import { claimDue, dueEndpoints } from './store/deliveries.ts';

/** Endpoints looked at per pass, and deliveries taken for one endpoint per claim. */
const ENDPOINTS_PER_PASS = 1_000;
const PER_ENDPOINT = 500;

/**
 * Takes due deliveries from the database into this replica's dispatcher: retries, what did not fit
 * a lane at intake, what a dead replica's lease handed back. Every replica polls; FOR UPDATE SKIP
 * LOCKED and the lease keep two from taking the same delivery.
 *
 * A pass finds the endpoints with something due (one index probe per endpoint with pending
 * deliveries, however many it has) and takes, per endpoint, what its lane has room for, oldest due
 * first; the replica's free capacity is shared evenly between them. So one endpoint's backlog never
 * crowds out another's, and a slow endpoint's backlog stays in the database. A pass runs at start,
 * then every `intervalMs`, at once again when one endpoint got all it asked for and the replica
 * has room, and a lane that emptied while its endpoint has more waiting asks for its own (`refill`).
 */
export class RetryPoller {
  private stopped = false;
  private readonly task: PeriodicTask<boolean>;
  private refills = new Set<Promise<void>>();

  constructor(
    private readonly deps: {
      pool: Pool;
      clock: Clock;
      dispatcher: Dispatcher;
      log: Logger;
      intervalMs: number;
      leaseMs: number;
    },
  ) {
    this.task = new PeriodicTask({
      name: 'webhook-retry-poll',
      intervalMs: deps.intervalMs,
      log: deps.log,
      run: () => this.pass(),
      more: (more) => more && deps.dispatcher.freeCapacity() > 0,
    });
  }

  start(): void {
    this.stopped = false;
    this.task.start();
    this.task.wake(); // what a stopped replica left due is taken at once
  }

  /** Take due deliveries now (after the pass in progress): answers whether some endpoint has more waiting. */
  poll(): Promise<boolean> {
    return this.task.runNow();
  }

  /** One pass over every endpoint with something due: answers whether some endpoint has more waiting. */
  async pass(): Promise<boolean> {
    const { dispatcher } = this.deps;
    const free = dispatcher.freeCapacity();
    if (free <= 0) return false;
    const now = this.deps.clock.now();
    const due = (await dueEndpoints(this.deps.pool, now, ENDPOINTS_PER_PASS)).filter(
      (id) => dispatcher.roomFor(id) > 0,
    );
    if (due.length === 0) return false;
    const share = Math.max(1, Math.floor(free / due.length));
    const quotas = due.map((endpointId) => ({
      endpointId,
      limit: Math.min(dispatcher.roomFor(endpointId), share, PER_ENDPOINT),
    }));
    const jobs = await claimDue(this.deps.pool, now, new Date(now.getTime() + this.deps.leaseMs), quotas);
    if (jobs.length > 0) dispatcher.accept(jobs);
    const taken = new Map<number, number>();
    for (const j of jobs) taken.set(j.endpointId, (taken.get(j.endpointId) ?? 0) + 1);
    return quotas.some((q) => taken.get(q.endpointId) === q.limit);
  }

  /** A lane has room again and its endpoint has deliveries waiting: take them now, for that endpoint only. */
  refill(endpointId: number): void {
    if (this.stopped) return this.deps.dispatcher.refilled(endpointId, true);
    const task = (async () => {
      const { dispatcher } = this.deps;
      const limit = Math.min(dispatcher.roomFor(endpointId), dispatcher.freeCapacity(), PER_ENDPOINT);
      let full = limit <= 0;
      try {
        if (limit > 0) {
          const now = this.deps.clock.now();
          const jobs = await claimDue(this.deps.pool, now, new Date(now.getTime() + this.deps.leaseMs), [
            { endpointId, limit },
          ]);
          full = jobs.length === limit;
          if (jobs.length > 0) dispatcher.accept(jobs);
        }
      } catch (err) {
        // The periodic pass takes it later.
        const message = err instanceof Error ? err.message : String(err);
        this.deps.log.warn({ err: message, endpoint: endpointId }, 'refilling a webhook lane failed');
      } finally {
        dispatcher.refilled(endpointId, full);
      }
    })();
    this.refills.add(task);
    void task.finally(() => this.refills.delete(task));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.task.stop();
    await Promise.all(this.refills);
  }
}
