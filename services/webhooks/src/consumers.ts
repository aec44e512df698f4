import type { DomainEvent } from '@loyalty/contracts';
import {
  BroadcastListener,
  EventBatchConsumer,
  type Pool,
  type ServicePart,
  type ServiceRuntime,
} from '@loyalty/runtime';
import type { Dispatcher } from './dispatcher.ts';
import { intake } from './intake.ts';
import type { RouteCache } from './route-cache.ts';
import { applyTenantStates } from './tenant-states.ts';

/** The endpoint an endpoints-changed broadcast (`{ tenant_id, endpoint_id }`) names, if any. */
const changedEndpoint = (m: unknown): number | undefined =>
  typeof m === 'object' && m !== null && 'endpoint_id' in m && Number.isSafeInteger(m.endpoint_id)
    ? Number(m.endpoint_id)
    : undefined;

/**
 * Before the intake: a tenant the operator deactivated pauses (reactivated, resumes), and every
 * replica's route cache forgets it, so its events are not routed meanwhile.
 */
function pausingTenants(pool: Pool, routes: RouteCache, handle: (batch: DomainEvent[]) => Promise<void>) {
  return async (batch: DomainEvent[]) => {
    for (const tenantId of await applyTenantStates(pool, batch)) routes.cache.announce({ tenant_id: tenantId });
    await handle(batch);
  };
}

/**
 * What the webhooks service listens to:
 * - every domain event of the stream, in batches; the intake keeps those a public type is made
 *   from and routes them to the tenant's endpoints;
 * - the endpoints-changed broadcast: the dispatcher reads a changed endpoint (URL, secrets,
 *   disabled, deleted) again before its next attempt (the route cache hears it itself).
 */
export function webhooksConsumers(
  rt: ServiceRuntime,
  deps: { dispatcher: Dispatcher; routes: RouteCache; leaseMs: number },
): ServicePart[] {
  const { nc, subjects, pool, clock, log, metrics } = rt;
  const { dispatcher, routes, leaseMs } = deps;
  return [
    new EventBatchConsumer({
      nc,
      subjects,
      durable: 'webhooks-intake',
      filterSubject: subjects.allEvents(),
      log,
      metrics,
      handle: pausingTenants(pool, routes, intake({ pool, clock, dispatcher, routes, log, leaseMs })),
      // A few milliseconds of events per batch: one acknowledgement write for all of them.
      lingerMs: 5,
    }),
    new BroadcastListener(nc, subjects.webhookEndpointsChanged(), (m) => {
      const endpointId = changedEndpoint(m);
      if (endpointId !== undefined) dispatcher.invalidate(endpointId);
    }),
  ];
}
