import type { DomainEvent } from '@loyalty/contracts';
import type { Pool } from '@loyalty/runtime';

/** Identity's events that pause and resume a tenant's webhooks. */
const PAUSES: Record<string, boolean> = {
  'identity.tenant_deactivated': true,
  'identity.tenant_reactivated': false,
};

/**
 * Record the tenants the batch deactivated or reactivated (the later event wins, by when it
 * happened: a redelivered or late one changes nothing); answers the tenants whose state changed,
 * for the route caches of every replica to forget. Idempotent, as the batch consumer requires.
 */
export async function applyTenantStates(pool: Pool, batch: DomainEvent[]): Promise<number[]> {
  const changes = batch.filter((e) => e.type in PAUSES);
  const changed: number[] = [];
  for (const e of changes) {
    const { rowCount } = await pool.query(
      `INSERT INTO webhooks.tenant_states (tenant_id, paused, changed_at) VALUES ($1, $2, $3)
       ON CONFLICT (tenant_id) DO UPDATE SET paused = EXCLUDED.paused, changed_at = EXCLUDED.changed_at
        WHERE webhooks.tenant_states.changed_at < EXCLUDED.changed_at`,
      [e.tenant_id, PAUSES[e.type], e.occurred_at],
    );
    if ((rowCount ?? 0) > 0) changed.push(e.tenant_id);
  }
  return changed;
}
