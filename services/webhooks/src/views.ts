import type { WebhookDelivery, WebhookEndpoint } from '@loyalty/contracts';
import { z } from 'zod';
import type { LoggedDelivery } from './store/deliveries.ts';
import type { EndpointRow } from './store/endpoints.ts';

/** What the log shows of a stored body: its data (the rest is in the delivery's columns). */
const SentBody = z.object({ data: z.record(z.string(), z.unknown()) });

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

/** An endpoint as the API shows it: never its secrets. */
export function endpointView(e: EndpointRow): WebhookEndpoint {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    event_types: e.event_types,
    enabled: e.enabled,
    disabled_reason: e.disabled_reason,
    disabled_at: iso(e.disabled_at),
    failing_since: iso(e.failing_since),
    secret_rotated_at: iso(e.secret_rotated_at),
    created_at: e.created_at.toISOString(),
    updated_at: e.updated_at.toISOString(),
  };
}

/** A delivery of the log: its event (the body that is sent), its attempts, its state. */
export function deliveryView(d: LoggedDelivery): WebhookDelivery {
  const sent = SentBody.parse(JSON.parse(d.body));
  return {
    id: d.id,
    endpoint_id: d.endpoint_id,
    status: d.status,
    event: { id: d.event_id, type: d.event_type, created_at: d.event_created_at.toISOString(), data: sent.data },
    attempts: d.attempts.map((a) => ({
      attempted_at: a.attempted_at.toISOString(),
      duration_ms: a.duration_ms,
      http_status: a.http_status,
      error: a.error,
    })),
    next_attempt_at: d.status === 'pending' ? iso(d.next_attempt_at) : null,
    delivered_at: iso(d.delivered_at),
    failed_at: iso(d.failed_at),
    created_at: d.created_at.toISOString(),
  };
}
