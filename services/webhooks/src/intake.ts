import { webhookTypeOfDomainEvent, type DomainEvent } from '@loyalty/contracts';
import { eventTrace, type Clock, type Logger, type Pool } from '@loyalty/runtime';
import type { Dispatcher } from './dispatcher.ts';
import { receives, wantsType } from './domain/endpoint.ts';
import { publicEvent, type WebhookEvent } from './domain/payload.ts';
import { RETRY_WINDOW_MS } from './domain/retry-schedule.ts';
import { insertDeliveries, type Job, type NewDelivery } from './store/deliveries.ts';
import type { RouteCache } from './route-cache.ts';
import type { Route } from './store/endpoints.ts';

/**
 * The hot path from JetStream to a sender: a batch of domain events (EventBatchConsumer) becomes
 * their public events and one delivery per endpoint that asked for the type, written in one
 * statement; the deliveries this replica has room for are leased to it in that same statement and
 * handed to its dispatcher at once (no second read), the others wait in the database, due.
 * Events no endpoint wants cost no query (the route cache) and no write.
 *
 * Idempotent, as the consumer requires: a redelivered batch finds its events and deliveries there
 * (unique per event and endpoint) and creates, and sends, nothing more.
 */
export function intake(deps: {
  pool: Pool;
  clock: Clock;
  dispatcher: Dispatcher;
  routes: RouteCache;
  log: Logger;
  leaseMs: number;
}) {
  const { pool, clock, dispatcher, log } = deps;
  return async (batch: DomainEvent[]): Promise<void> => {
    // Only events a public type is made from, of tenants with an endpoint that wants that type:
    // the rest (most events of most tenants) cost no parsing and no write.
    const mapped = batch.filter((e) => webhookTypeOfDomainEvent.has(e.type));
    if (mapped.length === 0) return;
    const byTenant = await deps.routes.routes([...new Set(mapped.map((e) => e.tenant_id))]);
    const events = publicEvents(mapped, byTenant, log);
    if (events.length === 0) return;
    const now = clock.now();
    const leaseUntil = new Date(now.getTime() + deps.leaseMs);
    const { deliveries, planned } = planDeliveries(events, byTenant, dispatcher, now, leaseUntil);
    if (deliveries.length === 0) return;
    let created: CreatedDelivery[];
    try {
      created = await insertDeliveries(pool, deliveries, now, RETRY_WINDOW_MS);
    } catch (err) {
      for (const [endpointId, n] of planned) dispatcher.unplan(endpointId, n);
      throw err;
    }
    const jobs = leasedJobs(created, deliveries, now, leaseUntil);
    // Places held for deliveries that existed already (a redelivered event) are given back.
    const accepted = new Map<number, number>();
    for (const j of jobs) accepted.set(j.endpointId, (accepted.get(j.endpointId) ?? 0) + 1);
    for (const [endpointId, n] of planned) dispatcher.unplan(endpointId, n - (accepted.get(endpointId) ?? 0));
    dispatcher.accept(jobs, true);
  };
}

type CreatedDelivery = { id: number; endpoint_id: number; event_id: string };

/** The public events of the domain events some endpoint of their tenant wants. */
function publicEvents(mapped: DomainEvent[], byTenant: Map<number, Route[]>, log: Logger): WebhookEvent[] {
  const events: WebhookEvent[] = [];
  for (const e of mapped) {
    const type = webhookTypeOfDomainEvent.get(e.type);
    if (type === undefined || !byTenant.get(e.tenant_id)?.some((r) => wantsType(r.event_types, type))) continue;
    const made = publicEvent(e);
    if (!made) continue;
    if ('problem' in made) {
      // A service's event that breaks its documented payload: a bug there, not a reason to stall here.
      log.error({ event: e.id, type: e.type, problem: made.problem }, 'domain event does not fit its webhook payload');
      continue;
    }
    events.push({ ...made.event, trace: eventTrace(e) ?? null });
  }
  return events;
}

/** One delivery per event and endpoint that receives it; `planned` counts the places held per endpoint. */
function planDeliveries(
  events: WebhookEvent[],
  byTenant: Map<number, Route[]>,
  dispatcher: Dispatcher,
  now: Date,
  leaseUntil: Date,
): { deliveries: NewDelivery[]; planned: Map<number, number> } {
  const deliveries: NewDelivery[] = [];
  const planned = new Map<number, number>();
  for (const event of events) {
    for (const route of byTenant.get(event.tenant_id) ?? []) {
      if (!receives(route, event.type, event.created_at)) continue;
      // Leased here when the lane has room; otherwise due now, in the database, for the lane to ask for.
      const take = dispatcher.plan(event.tenant_id, route.id);
      if (take) planned.set(route.id, (planned.get(route.id) ?? 0) + 1);
      deliveries.push({ event, endpointId: route.id, nextAttemptAt: take ? leaseUntil : now });
    }
  }
  return { deliveries, planned };
}

/** The jobs of the deliveries created leased to this replica (a redelivered event creates none). */
function leasedJobs(created: CreatedDelivery[], deliveries: NewDelivery[], now: Date, leaseUntil: Date): Job[] {
  const taken = new Map(
    deliveries.filter((d) => d.nextAttemptAt === leaseUntil).map((d) => [`${d.event.id} ${d.endpointId}`, d]),
  );
  const jobs: Job[] = [];
  for (const row of created) {
    const d = taken.get(`${row.event_id} ${row.endpoint_id}`);
    if (!d) continue;
    jobs.push({
      deliveryId: row.id,
      tenantId: d.event.tenant_id,
      endpointId: d.endpointId,
      eventId: d.event.id,
      type: d.event.type,
      body: d.event.body,
      attempts: 0,
      expiresAt: new Date(now.getTime() + RETRY_WINDOW_MS),
      eventCreatedAt: d.event.created_at,
      leaseUntil,
      trace: d.event.trace ?? null,
    });
  }
  return jobs;
}
