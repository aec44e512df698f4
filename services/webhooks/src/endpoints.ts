import { memberDataInternalOperations, webhookAdminOperations, webhookOperations, type Meta } from '@loyalty/contracts';
import { Endpoints } from '@loyalty/runtime';
import type { DeliveryLog } from './delivery-log.ts';
import type { Caller, EndpointRegistry } from './endpoint-registry.ts';
import type { WebhooksMemberData } from './member-data.ts';

/**
 * Subject -> handler table of the webhooks service: the merchant API (the tenant is the caller's)
 * and the operator API (the tenant is the path's, checked with identity first). Handlers stay thin.
 */
export function webhooksEndpoints(
  registry: EndpointRegistry,
  deliveries: DeliveryLog,
  /** The operator named this tenant: it must exist (identity answers tenant_not_found otherwise). */
  checkTenant: (tenantId: number, requestId: string) => Promise<void>,
  memberData: WebhooksMemberData,
): Endpoints {
  const o = webhookOperations;
  const a = webhookAdminOperations;
  const merchant = (m: Meta): Caller => ({ tenantId: m.tenant_id, idempotencyKey: m.idempotency_key });
  const operator = async (d: { tenant_id: number }, requestId: string): Promise<Caller> => {
    await checkTenant(d.tenant_id, requestId);
    return { tenantId: d.tenant_id };
  };
  return new Endpoints('webhooks')
    .public(o['webhooks.endpoints.create'], (d, c) => registry.create(merchant(c.meta), d))
    .public(o['webhooks.endpoints.list'], (_d, c) => registry.list(merchant(c.meta)))
    .public(o['webhooks.endpoints.get'], (d, c) => registry.get(merchant(c.meta), d))
    .public(o['webhooks.endpoints.update'], (d, c) => registry.update(merchant(c.meta), d))
    .public(o['webhooks.endpoints.delete'], (d, c) => registry.remove(merchant(c.meta), d))
    .public(o['webhooks.endpoints.rotate_secret'], (d, c) => registry.rotateSecret(merchant(c.meta), d))
    .public(o['webhooks.endpoints.ping'], (d, c) => deliveries.ping(merchant(c.meta), d))
    .public(o['webhooks.deliveries.list'], (d, c) => deliveries.list(merchant(c.meta), d))
    .public(o['webhooks.deliveries.redeliver'], (d, c) => deliveries.redeliver(merchant(c.meta), d))
    .internal(memberDataInternalOperations.webhooksErase, (d, c) => memberData.erase(d, c.meta))
    .internal(memberDataInternalOperations.webhooksExport, (d, c) => memberData.export(d, c.meta))
    .operator(a['admin.webhooks.endpoints.create'], async (d, c) =>
      registry.create(await operator(d, c.requestId), {
        url: d.url,
        event_types: d.event_types,
        description: d.description,
      }),
    )
    .operator(a['admin.webhooks.endpoints.list'], async (d, c) => registry.list(await operator(d, c.requestId)))
    .operator(a['admin.webhooks.endpoints.get'], async (d, c) => registry.get(await operator(d, c.requestId), d))
    .operator(a['admin.webhooks.endpoints.update'], async (d, c) => registry.update(await operator(d, c.requestId), d))
    .operator(a['admin.webhooks.endpoints.delete'], async (d, c) => registry.remove(await operator(d, c.requestId), d))
    .operator(a['admin.webhooks.endpoints.rotate_secret'], async (d, c) =>
      registry.rotateSecret(await operator(d, c.requestId), { endpoint_id: d.endpoint_id }),
    )
    .operator(a['admin.webhooks.endpoints.ping'], async (d, c) =>
      deliveries.ping(await operator(d, c.requestId), { endpoint_id: d.endpoint_id }),
    )
    .operator(a['admin.webhooks.deliveries.list'], async (d, c) => deliveries.list(await operator(d, c.requestId), d))
    .operator(a['admin.webhooks.deliveries.redeliver'], async (d, c) =>
      deliveries.redeliver(await operator(d, c.requestId), { delivery_id: d.delivery_id }),
    );
}
