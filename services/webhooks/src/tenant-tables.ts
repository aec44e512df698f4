import type { TenantTable } from '@loyalty/runtime';

/** The webhooks tables holding a tenant's data, children first (the operator's export and purge of a tenant). */
export const webhooksTenantTables: TenantTable[] = [
  {
    table: 'attempts',
    where: 'delivery_id IN (SELECT id FROM webhooks.deliveries WHERE tenant_id = $1)',
    key: 'delivery_id, attempted_at',
  },
  { table: 'deliveries' },
  { table: 'events' },
  // Signing secrets are encrypted at rest; an export leaves them (and the tenant's wrapped key) out.
  { table: 'endpoints', omit: ['secret', 'previous_secret'] },
  { table: 'tenant_keys', key: 'tenant_id', omit: ['wrapped_key'] },
  { table: 'tenant_states', key: 'tenant_id' },
];
