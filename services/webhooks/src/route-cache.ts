import { ReplicaCache, type Metrics, type NatsConnection, type Pool } from '@loyalty/runtime';
import { routesOf, type Route } from './store/endpoints.ts';

/** The tenant an endpoints-changed broadcast (`{ tenant_id, endpoint_id }`) names; a malformed one names none. */
const changedTenant = (m: unknown): number[] =>
  typeof m === 'object' && m !== null && 'tenant_id' in m && Number.isSafeInteger(m.tenant_id)
    ? [Number(m.tenant_id)]
    : [];

/**
 * Which enabled endpoints each tenant has, as the intake routes events by them: remembered per
 * tenant (no endpoints included, the common case) for `ttlMs`, and forgotten at once when an
 * endpoint of the tenant is created, changed, disabled or deleted on any replica (the
 * endpoints-changed broadcast) or when this replica's NATS connection drops (it may have missed
 * broadcasts); a read that raced such a change is not kept. Without it every batch of events cost
 * a query, whatever the tenant.
 */
export class RouteCache {
  readonly cache: ReplicaCache<number, Route[]>;

  constructor(
    private readonly pool: Pool,
    opts: { ttlMs: number; maxEntries?: number; nc?: NatsConnection; subject?: string; metrics?: Metrics },
  ) {
    this.cache = new ReplicaCache<number, Route[]>({
      name: 'webhook-routes',
      ttlMs: opts.ttlMs,
      maxEntries: opts.maxEntries ?? 100_000,
      metrics: opts.metrics,
      nc: opts.nc,
      broadcast: opts.subject === undefined ? undefined : { subject: opts.subject, forgets: changedTenant },
    });
  }

  async routes(tenantIds: number[]): Promise<Map<number, Route[]>> {
    const out = new Map<number, Route[]>();
    const missing: number[] = [];
    for (const id of tenantIds) {
      const hit = this.cache.get(id);
      if (hit) out.set(id, hit);
      else missing.push(id);
    }
    if (missing.length === 0) return out;
    const ticket = this.cache.ticket();
    const loaded = new Map<number, Route[]>(missing.map((id) => [id, []]));
    for (const r of await routesOf(this.pool, missing)) loaded.get(r.tenant_id)?.push(r);
    for (const [id, routes] of loaded) {
      out.set(id, routes);
      this.cache.set(id, routes, ticket);
    }
    return out;
  }

  /** A tenant's endpoints changed (or, without a tenant, anything may have). */
  forget(tenantId?: number): void {
    if (tenantId === undefined) this.cache.forgetAll();
    else this.cache.forget(tenantId);
  }
}
