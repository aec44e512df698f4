import {
  webhookTypeOfDomainEvent,
  webhookEventTypes,
  type DomainEvent,
  type WebhookEventName,
} from '@loyalty/contracts';

/** One event as endpoints receive it: the exact body that is signed and POSTed on every attempt. */
export interface WebhookEvent {
  id: string;
  tenant_id: number;
  type: WebhookEventName;
  created_at: Date;
  body: string;
  /** The `traceparent` the domain event arrived with (tracing on), kept with the event for its deliveries. */
  trace?: string | null;
}

/**
 * The public event of a domain event, or undefined for a domain event no webhook type is made from.
 * `data` keeps exactly the fields the type documents (webhook-events.ts in the contracts); a domain
 * event whose data does not fit is a bug of its service, reported as `problem`.
 */
export function publicEvent(e: DomainEvent): { event: WebhookEvent } | { problem: string } | undefined {
  const type = webhookTypeOfDomainEvent.get(e.type);
  if (!type) return undefined;
  const data = webhookEventTypes[type].data.safeParse(e.data);
  if (!data.success) return { problem: data.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
  return { event: envelope(e.id, type, e.tenant_id, new Date(e.occurred_at), data.data) };
}

/** `{id, type, created_at, tenant_id, data}`, serialized once. */
export function envelope(
  id: string,
  type: WebhookEventName,
  tenantId: number,
  createdAt: Date,
  data: Record<string, unknown>,
): WebhookEvent {
  const body = JSON.stringify({ id, type, created_at: createdAt.toISOString(), tenant_id: tenantId, data });
  return { id, tenant_id: tenantId, type, created_at: createdAt, body };
}
