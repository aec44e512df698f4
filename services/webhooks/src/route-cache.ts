import type { Pool } from '@loyalty/runtime';
import { routesOf, type Route } from './store/endpoints.ts';

/**
 * Which enabled endpoints each tenant has, as the intake routes events by them: remembered per
 * tenant (no endpoints included, the common case) for `ttlMs`, and forgotten at once when an
 * endpoint of the tenant is created, changed, disabled or deleted on any replica (the
 * endpoints-changed broadcast) or when this replica's NATS connection drops (it may have missed
 * broadcasts). Without it every batch of events cost a query, whatever the tenant.
 */
export class RouteCache {
  private readonly entries = new Map<number, { routes: Route[]; loadedAt: number }>();
  /** Bumped by every forget: a load that started before one does not store what it read. */
  private generation = 0;

  constructor(
    private readonly pool: Pool,
    private readonly ttlMs: number,
  ) {}

  async routes(tenantIds: number[]): Promise<Map<number, Route[]>> {
    const now = Date.now();
    const out = new Map<number, Route[]>();
    const missing: number[] = [];
    for (const id of tenantIds) {
      const e = this.entries.get(id);
      if (e && now - e.loadedAt < this.ttlMs) out.set(id, e.routes);
      else missing.push(id);
    }
    if (missing.length === 0) return out;
    const generation = this.generation;
    const loaded = new Map<number, Route[]>(missing.map((id) => [id, []]));
    for (const r of await routesOf(this.pool, missing)) loaded.get(r.tenant_id)!.push(r);
    for (const [id, routes] of loaded) {
      out.set(id, routes);
      if (generation === this.generation) this.entries.set(id, { routes, loadedAt: now });
    }
    return out;
  }

  /** A tenant's endpoints changed (or, without a tenant, anything may have). */
  forget(tenantId?: number): void {
    this.generation++;
    if (tenantId === undefined) this.entries.clear();
    else this.entries.delete(tenantId);
  }
}
