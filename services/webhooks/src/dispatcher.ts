import { contextOf, failSpan, inSpan, linkTo, SpanKind, tracingOn, type Clock, type Logger } from '@loyalty/runtime';
import { nextAttemptAt } from './domain/retry-schedule.ts';
import type { WebhookMetrics } from './metrics.ts';
import type { OutcomeLog } from './outcome-log.ts';
import type { AttemptResult, Sender } from './sender.ts';
import type { Job } from './store/deliveries.ts';
import { signingSecrets, type Target } from './store/endpoints.ts';

export interface DispatcherLimits {
  /** Attempts in flight per endpoint. */
  endpointConcurrency: number;
  /** Attempts in flight per tenant. */
  tenantConcurrency: number;
  /** Attempts in flight in all. */
  maxInFlight: number;
  /** Jobs held in memory in all (queued, not yet sent). */
  maxQueued: number;
  /** How long this replica owns a job it took. */
  leaseMs: number;
  /** The attempt timeout. */
  timeoutMs: number;
}

/** How long a lane trusts the endpoint it loaded before it reads it again (URL, secrets, enabled). */
const TARGET_TTL_MS = 5_000;

/** A place in a lane held by `plan` for a job being inserted. */
const PLACEHOLDER: unique symbol = Symbol('planned');

/** A lane's queue entry: a job, a held place, or (before `head`) a taken job's emptied slot. */
type Slot = Job | typeof PLACEHOLDER | undefined;

/** One endpoint's queue in this replica. */
interface Lane {
  endpointId: number;
  tenant: TenantQueue;
  queue: Slot[];
  head: number;
  inFlight: number;
  target: Target | undefined;
  loadedAt: number;
  loading: boolean;
  /** Smoothed duration of an attempt (ms); with the concurrency it gives the lane's rate. */
  latencyMs: number;
  /** Deliveries of this endpoint wait in the database for room here (the lane asks for them when it has some). */
  overflow: boolean;
  /** A refill from the database is under way; `overflows` counts what intake left in the database. */
  refilling: boolean;
  overflows: number;
  overflowsAtRefill: number;
}

interface TenantQueue {
  id: number;
  lanes: Lane[];
  cursor: number;
  inFlight: number;
  ready: boolean;
}

/**
 * The sending side of one replica: jobs (deliveries this replica holds a lease on) wait in a lane
 * per endpoint and are sent with bounded concurrency per endpoint, per tenant and in all, and the
 * free slots go round robin over tenants, then over a tenant's endpoints. So one tenant's dead or
 * slow endpoint fills its own lane and its own slots and never the others': a timeout holds one of
 * that endpoint's slots, not a worker everyone waits behind.
 *
 * A lane holds what the endpoint can take within a third of the lease (its rate, from the smoothed
 * attempt time, times the concurrency); what does not fit stays due in the database, and the lane
 * asks for it (by endpoint, so nobody else's deliveries are scanned past) once it is half empty. A
 * slow endpoint's backlog thus waits in the database, not in memory in front of everybody else's.
 * A job whose lease would run out before its attempt could end is handed back instead of sent
 * (another replica may own it by then), so a job is never sent by two replicas for want of a lease.
 */
export class Dispatcher {
  private readonly lanes = new Map<number, Lane>();
  private readonly tenants = new Map<number, TenantQueue>();
  private readonly ready: TenantQueue[] = [];
  private inFlight = 0;
  private queued = 0;
  private stopped = false;
  private idle: (() => void)[] = [];

  constructor(
    private readonly deps: {
      sender: Sender;
      outcomes: OutcomeLog;
      clock: Clock;
      log: Logger;
      metrics: WebhookMetrics;
      limits: DispatcherLimits;
      /** Read endpoints (the lanes' targets), by id; missing ones are gone. */
      loadTargets: (ids: number[]) => Promise<Map<number, Target>>;
      /** The lane of an endpoint with deliveries waiting in the database has room for them again. */
      onRoom?: (endpointId: number) => void;
    },
  ) {}

  /** Jobs that fit in memory now (the poller takes at most this many). */
  freeCapacity(): number {
    return Math.max(0, this.deps.limits.maxQueued - this.queued);
  }

  /** How many more jobs this replica takes for an endpoint now (the poller asks before it claims). */
  roomFor(endpointId: number): number {
    const lane = this.lanes.get(endpointId);
    return lane ? Math.max(0, this.room(lane)) : this.capacity(undefined);
  }

  /**
   * Whether this replica takes a new delivery to `endpointId` now (the lane has room: it is leased
   * here and sent from memory) or leaves it due in the database, for this lane to ask for when it
   * has room (or any replica's poller).
   */
  plan(tenantId: number, endpointId: number): boolean {
    const lane = this.lane(tenantId, endpointId);
    if (this.room(lane) > 0 && this.queued < this.deps.limits.maxQueued) {
      lane.queue.push(PLACEHOLDER); // holds the place until `accept` replaces it (or `unplan`)
      this.queued++;
      return true;
    }
    lane.overflow = true;
    lane.overflows++;
    return false;
  }

  /** A refill of `endpointId` from the database ended; `full`: it got all it asked for (more may wait). */
  refilled(endpointId: number, full: boolean): void {
    const lane = this.lanes.get(endpointId);
    if (!lane) return;
    lane.refilling = false;
    // More may wait: it got all it asked for, or intake left more in the database meanwhile.
    lane.overflow = full || lane.overflows !== lane.overflowsAtRefill;
  }

  /** Give back places `plan` held that were not used (a redelivered event created nothing). */
  unplan(endpointId: number, count: number): void {
    const lane = this.lanes.get(endpointId);
    if (!lane) return;
    for (let i = 0; i < count; i++) {
      const at = lane.queue.lastIndexOf(PLACEHOLDER);
      if (at < lane.head) break;
      lane.queue.splice(at, 1);
      this.queued--;
    }
  }

  /** Jobs this replica leased: queue them (in place of what `plan` held for them) and start what can start. */
  accept(jobs: Job[], planned = false): void {
    for (const job of jobs) {
      const lane = this.lane(job.tenantId, job.endpointId);
      const at = planned ? lane.queue.indexOf(PLACEHOLDER, lane.head) : -1;
      if (at >= 0) lane.queue[at] = job;
      else {
        lane.queue.push(job);
        this.queued++;
      }
      if (this.stopped) continue;
      this.markReady(lane.tenant);
    }
    this.pump();
  }

  /** The endpoint changed (URL, secrets, disabled, deleted): read it again before the next attempt. */
  invalidate(endpointId: number): void {
    const lane = this.lanes.get(endpointId);
    if (lane) lane.loadedAt = 0;
  }

  /** Stop sending: attempts in flight finish; queued jobs are handed back (due now, for any replica). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const lane of this.lanes.values()) {
      for (const job of this.drain(lane)) this.handBack(job, this.deps.clock.now());
    }
    if (this.inFlight > 0) await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  stats(): { inFlight: number; queued: number; lanes: number } {
    return { inFlight: this.inFlight, queued: this.queued, lanes: this.lanes.size };
  }

  private lane(tenantId: number, endpointId: number): Lane {
    let lane = this.lanes.get(endpointId);
    if (lane) return lane;
    let tenant = this.tenants.get(tenantId);
    if (!tenant) {
      tenant = { id: tenantId, lanes: [], cursor: 0, inFlight: 0, ready: false };
      this.tenants.set(tenantId, tenant);
    }
    lane = {
      endpointId,
      tenant,
      queue: [],
      head: 0,
      inFlight: 0,
      target: undefined,
      loadedAt: 0,
      loading: false,
      // Unknown endpoints start cautious (a second per attempt) and speed up as answers come.
      latencyMs: 1_000,
      overflow: false,
      refilling: false,
      overflows: 0,
      overflowsAtRefill: 0,
    };
    this.lanes.set(endpointId, lane);
    tenant.lanes.push(lane);
    return lane;
  }

  /** Attempts a second the lane can make: its concurrency over its smoothed attempt time. */
  private rate(lane: Lane): number {
    return (this.deps.limits.endpointConcurrency * 1_000) / Math.max(1, lane.latencyMs);
  }

  /** What a lane may hold: what it sends in a third of the lease at its rate, at least twice its concurrency. */
  private capacity(lane: Lane | undefined): number {
    const c = this.deps.limits.endpointConcurrency;
    const rate = lane ? this.rate(lane) : c; // an unknown endpoint: a second per attempt
    return Math.min(5_000, Math.max(2 * c, Math.ceil((rate * this.deps.limits.leaseMs) / 3_000)));
  }

  private room(lane: Lane): number {
    return this.capacity(lane) - (lane.queue.length - lane.head) - lane.inFlight;
  }

  private waiting(lane: Lane): number {
    return lane.queue.length - lane.head;
  }

  private startable(lane: Lane): boolean {
    const next = lane.queue[lane.head];
    return next !== undefined && next !== PLACEHOLDER && lane.inFlight < this.deps.limits.endpointConcurrency;
  }

  private markReady(tenant: TenantQueue): void {
    if (tenant.ready || tenant.inFlight >= this.deps.limits.tenantConcurrency) return;
    if (!tenant.lanes.some((l) => this.startable(l) && !l.loading)) return;
    tenant.ready = true;
    this.ready.push(tenant);
  }

  /** Start attempts while there are free slots: one per tenant in turn, its endpoints in turn. */
  private pump(): void {
    while (!this.stopped && this.inFlight < this.deps.limits.maxInFlight) {
      const tenant = this.ready.shift();
      if (!tenant) break;
      tenant.ready = false;
      const lane = this.nextLane(tenant);
      if (lane) {
        const target = this.freshTarget(lane);
        const job = target && this.take(lane); // a startable lane has a job at its head
        if (target && job) this.start(lane, job, target);
        else if (!target) this.load(lane);
      }
      this.markReady(tenant);
    }
  }

  private nextLane(tenant: TenantQueue): Lane | undefined {
    const n = tenant.lanes.length;
    for (let i = 0; i < n; i++) {
      const lane = tenant.lanes[(tenant.cursor + i) % n];
      if (lane && this.startable(lane) && !lane.loading) {
        tenant.cursor = (tenant.cursor + i + 1) % n;
        return lane;
      }
    }
    return undefined;
  }

  /** The lane's endpoint if it was read recently enough to send to; undefined: read it again first. */
  private freshTarget(lane: Lane): Target | undefined {
    return Date.now() - lane.loadedAt < TARGET_TTL_MS ? lane.target : undefined;
  }

  /** Read the lane's endpoint; a disabled or deleted one gets nothing more (its jobs are given up). */
  private load(lane: Lane): void {
    lane.loading = true;
    this.deps
      .loadTargets([lane.endpointId])
      .then((targets) => {
        const target = targets.get(lane.endpointId);
        lane.target = target;
        lane.loadedAt = Date.now();
        if (!target || !target.live) {
          const now = this.deps.clock.now();
          for (const job of this.drain(lane)) this.giveUp(job, now, 'the endpoint was disabled or deleted');
          this.forget(lane);
        }
      })
      .catch((err: Error) => {
        this.deps.log.warn({ err: err.message, endpoint: lane.endpointId }, 'reading a webhook endpoint failed');
        // Try again shortly; the jobs keep their places.
        return new Promise((r) => setTimeout(r, 1_000));
      })
      .finally(() => {
        lane.loading = false;
        this.markReady(lane.tenant);
        this.pump();
      });
  }

  private take(lane: Lane): Job | undefined {
    const job = lane.queue[lane.head];
    if (job === undefined || job === PLACEHOLDER) return undefined;
    lane.queue[lane.head] = undefined; // the job is not held here once taken
    lane.head++;
    this.queued--;
    if (lane.head > 1024 && lane.head * 2 > lane.queue.length) {
      lane.queue = lane.queue.slice(lane.head);
      lane.head = 0;
    }
    return job;
  }

  private drain(lane: Lane): Job[] {
    const jobs = lane.queue.slice(lane.head).filter((j): j is Job => j !== PLACEHOLDER && j !== undefined);
    this.queued -= lane.queue.length - lane.head;
    lane.queue = [];
    lane.head = 0;
    return jobs;
  }

  /** Drop an idle lane of a gone endpoint (a lane with jobs in flight is dropped when they end). */
  private forget(lane: Lane): void {
    if (lane.inFlight > 0 || this.waiting(lane) > 0) return;
    this.lanes.delete(lane.endpointId);
    const tenant = lane.tenant;
    tenant.lanes = tenant.lanes.filter((l) => l !== lane);
    tenant.cursor = 0;
    if (tenant.lanes.length === 0 && tenant.inFlight === 0) this.tenants.delete(tenant.id);
  }

  private start(lane: Lane, job: Job, target: Target): void {
    const now = this.deps.clock.now();
    // Not enough lease left for a whole attempt: hand it back rather than risk a second sender.
    if (job.leaseUntil.getTime() - now.getTime() < this.deps.limits.timeoutMs + 2_000) {
      this.handBack(job, now);
      this.roomFreed(lane);
      return;
    }
    const tenant = lane.tenant;
    lane.inFlight++;
    tenant.inFlight++;
    this.inFlight++;
    void attemptSpan(job, target.url, () =>
      this.deps.sender.send(
        target.url,
        signingSecrets(target, now),
        { id: job.eventId, type: job.type, body: job.body },
        now,
      ),
    )
      .then((result) => {
        const done = this.deps.clock.now();
        lane.latencyMs = lane.latencyMs * 0.8 + Math.max(1, result.durationMs) * 0.2;
        this.deps.metrics.attempt(result.outcome, result.durationMs);
        const delivered = result.outcome === 'delivered';
        const next = delivered ? null : nextAttemptAt(job.attempts + 1, done, job.expiresAt);
        const status = delivered ? 'delivered' : next ? 'pending' : 'failed';
        if (status !== 'pending')
          this.deps.metrics.final(
            status,
            delivered ? done.getTime() - job.eventCreatedAt.getTime() : undefined,
            job.attempts + 1,
          );
        this.deps.outcomes.record({
          deliveryId: job.deliveryId,
          endpointId: job.endpointId,
          status,
          nextAttemptAt: next,
          attempted: true,
          attemptedAt: now,
          durationMs: result.durationMs,
          httpStatus: result.httpStatus,
          error: result.error,
        });
      })
      .catch((err: Error) => this.deps.log.error({ err: err.message }, 'webhook attempt bookkeeping failed'))
      .finally(() => {
        lane.inFlight--;
        tenant.inFlight--;
        this.inFlight--;
        if (lane.target && !lane.target.live) this.forget(lane);
        this.markReady(tenant);
        this.roomFreed(lane);
        this.pump();
        if (this.inFlight === 0) this.idle.splice(0).forEach((wake) => wake());
      });
  }

  /** A lane whose endpoint has deliveries waiting in the database asks for them once it is half empty. */
  private roomFreed(lane: Lane): void {
    if (!lane.overflow || lane.refilling || this.stopped) return;
    if (this.room(lane) * 2 < this.capacity(lane)) return;
    lane.refilling = true;
    lane.overflowsAtRefill = lane.overflows;
    this.deps.onRoom?.(lane.endpointId);
  }

  /** Not attempted: due again now, for whichever replica takes it. */
  private handBack(job: Job, now: Date): void {
    this.deps.outcomes.record({
      deliveryId: job.deliveryId,
      endpointId: job.endpointId,
      status: 'pending',
      nextAttemptAt: now,
      attempted: false,
      attemptedAt: now,
      durationMs: 0,
      httpStatus: null,
      error: null,
    });
  }

  private giveUp(job: Job, now: Date, reason: string): void {
    this.deps.metrics.final('failed');
    this.deps.outcomes.record({
      deliveryId: job.deliveryId,
      endpointId: job.endpointId,
      status: 'failed',
      nextAttemptAt: null,
      attempted: false,
      attemptedAt: now,
      durationMs: 0,
      httpStatus: null,
      error: reason,
    });
  }
}

/**
 * An attempt is a span of the trace behind its event (tracing on), linked to that trace's
 * publishing span; a retry hours later joins the same trace.
 */
function attemptSpan(job: Job, url: string, send: () => Promise<AttemptResult>): Promise<AttemptResult> {
  if (!tracingOn() || !job.trace) return send();
  return inSpan(
    `webhook delivery ${job.type}`,
    {
      kind: SpanKind.CLIENT,
      parent: contextOf(job.trace),
      links: linkTo(job.trace),
      attributes: {
        'loyalty.webhook.delivery_id': job.deliveryId,
        'loyalty.webhook.endpoint_id': job.endpointId,
        'loyalty.webhook.attempt': job.attempts + 1,
        'server.address': new URL(url).host,
      },
    },
    async (span) => {
      const result = await send();
      span?.setAttribute('loyalty.webhook.outcome', result.outcome);
      if (result.outcome !== 'delivered') failSpan(span, result.outcome);
      return result;
    },
  );
}
