import { z } from 'zod';
import { Id, IdParam, Pagination, Text, Timestamp, pageQuery } from '../common.ts';
import type { ErrorCode } from '../errors.ts';
import { webhookEventNames } from '../webhook-events.ts';
import { defineOperations } from './types.ts';

/**
 * Webhooks (services/webhooks): a tenant's endpoints, which receive its domain events as signed
 * HTTP POSTs, and the log of deliveries. The same operations exist for the operator under
 * `/admin/v1/tenants/{tenant_id}/webhooks/...`.
 */
const base = { service: 'webhooks', memberToken: false, tag: 'Webhooks', scope: 'webhooks_manage' } as const;
const admin = {
  service: 'webhooks',
  memberToken: false,
  tag: 'Webhooks (operator)',
  scope: null,
  idempotent: false,
} as const;

/** Longest endpoint URL accepted. */
export const WEBHOOK_URL_MAX = 2048;

/**
 * The URL rules that need no network: absolute, http or https, a host, not port 0, no user or
 * password in it, no fragment. Where it points (a private address?) is checked by the service when it resolves it.
 */
export function webhookUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute http or https URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL';
  if (url.username !== '' || url.password !== '') return 'must not contain a user name or password';
  if (url.hostname === '') return 'must name a host';
  // Port 0 is no port a server listens on: every delivery would fail to connect.
  if (url.port === '0') return 'must not name port 0';
  if (url.hash !== '') return 'must not contain a fragment (#...)';
  return undefined;
}

const WebhookUrl = Text.trim()
  .min(1)
  .max(WEBHOOK_URL_MAX)
  .superRefine((v, ctx) => {
    const problem = webhookUrlProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .describe('absolute http(s) URL of a public address, without credentials; at most 2048 characters');

/** Public event types an endpoint can ask for (`ping` is always sent on request), or `*` for all. */
export const subscribableWebhookTypes = webhookEventNames.filter((t) => t !== 'ping');
const EventTypes = z
  .array(z.enum(['*', ...subscribableWebhookTypes]))
  .min(1)
  .max(50)
  .transform((types) => [...new Set(types)])
  .refine((types) => !types.includes('*') || types.length === 1, 'use "*" alone (every type) or name the types')
  .describe('the event types to receive, or ["*"] for every type');
const Description = Text.trim().max(500);

export const webhookDeliveryStatuses = ['pending', 'delivered', 'failed'] as const;

export const WebhookEndpoint = z
  .object({
    id: Id,
    url: z.string(),
    description: z.string().nullable(),
    event_types: z.array(z.string()),
    enabled: z.boolean(),
    disabled_reason: z
      .enum(['manual', 'failing'])
      .nullable()
      .describe('`failing`: every delivery failed for three days, so the platform disabled it'),
    disabled_at: Timestamp.nullable(),
    failing_since: Timestamp.nullable().describe('first failed attempt since the last successful one'),
    secret_rotated_at: Timestamp.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'WebhookEndpoint' });
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

const WithSecret = z
  .object({
    ...WebhookEndpoint.shape,
    secret: z.string().describe('the signing secret; shown only here, keep it'),
  })
  .meta({ id: 'WebhookEndpointWithSecret' });

export const WebhookAttempt = z
  .object({
    attempted_at: Timestamp,
    duration_ms: z.number().int(),
    http_status: z.number().int().nullable().describe('null when no response came'),
    error: z.string().nullable().describe('why the attempt failed (timeout, connection refused, refused address)'),
  })
  .meta({ id: 'WebhookAttempt' });

export const WebhookDelivery = z
  .object({
    id: Id,
    endpoint_id: Id,
    status: z.enum(webhookDeliveryStatuses),
    event: z.object({
      id: z.string(),
      type: z.string(),
      created_at: Timestamp,
      data: z.record(z.string(), z.unknown()),
    }),
    attempts: z.array(WebhookAttempt).describe('oldest first'),
    next_attempt_at: Timestamp.nullable().describe('when a pending delivery is tried next'),
    delivered_at: Timestamp.nullable(),
    failed_at: Timestamp.nullable().describe('when it was given up (after three days, or the endpoint was disabled)'),
    created_at: Timestamp,
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

const EndpointParams = z.object({ endpoint_id: IdParam });
const DeliveryParams = z.object({ delivery_id: IdParam });
const CreateBody = z.object({ url: WebhookUrl, event_types: EventTypes, description: Description.optional() });
const UpdateBody = z
  .object({
    url: WebhookUrl.optional(),
    event_types: EventTypes.optional(),
    description: Description.nullable().optional(),
    enabled: z.boolean().optional(),
  })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), 'name at least one field to change');
const DeliveriesQuery = z.object({ status: z.enum(webhookDeliveryStatuses).optional(), ...pageQuery(20, 100) });

const endpointResponse = z.object({ endpoint: WebhookEndpoint });
const secretResponse = z.object({
  endpoint: WithSecret,
  previous_secret_expires_at: Timestamp.nullable().describe('until then the old secret signs too (a second v1)'),
});
const deliveryResponse = z.object({ delivery: WebhookDelivery });

const endpointErrors: ErrorCode[] = ['webhook_endpoint_not_found'];

export const webhookOperations = defineOperations({
  'webhooks.endpoints.create': {
    ...base,
    method: 'POST',
    path: '/api/v1/webhooks/endpoints',
    operation: 'webhooks.endpoints.create',
    idempotent: true,
    summary: 'Create a webhook endpoint; its signing secret is in this answer only',
    body: CreateBody,
    response: z.object({ endpoint: WithSecret }),
    errors: ['webhook_url_refused', 'webhook_endpoint_limit'],
  },
  'webhooks.endpoints.list': {
    ...base,
    method: 'GET',
    path: '/api/v1/webhooks/endpoints',
    operation: 'webhooks.endpoints.list',
    idempotent: false,
    summary: "The tenant's webhook endpoints, oldest first (never their secrets)",
    response: z.object({ endpoints: z.array(WebhookEndpoint) }),
    errors: [],
  },
  'webhooks.endpoints.get': {
    ...base,
    method: 'GET',
    path: '/api/v1/webhooks/endpoints/:endpoint_id',
    operation: 'webhooks.endpoints.get',
    idempotent: false,
    summary: 'One webhook endpoint',
    params: EndpointParams,
    response: endpointResponse,
    errors: endpointErrors,
  },
  'webhooks.endpoints.update': {
    ...base,
    method: 'PATCH',
    path: '/api/v1/webhooks/endpoints/:endpoint_id',
    operation: 'webhooks.endpoints.update',
    idempotent: false,
    summary:
      'Change the URL, event types or description, or disable (`enabled: false`) or enable an endpoint; disabling gives up its pending deliveries',
    params: EndpointParams,
    body: UpdateBody,
    response: endpointResponse,
    errors: [...endpointErrors, 'webhook_url_refused'],
  },
  'webhooks.endpoints.delete': {
    ...base,
    method: 'DELETE',
    path: '/api/v1/webhooks/endpoints/:endpoint_id',
    operation: 'webhooks.endpoints.delete',
    idempotent: false,
    summary: 'Delete an endpoint: nothing more is sent to it, its pending deliveries are dropped',
    params: EndpointParams,
    response: z.object({ endpoint_id: Id, deleted: z.literal(true) }),
    errors: endpointErrors,
  },
  'webhooks.endpoints.rotate_secret': {
    ...base,
    method: 'POST',
    path: '/api/v1/webhooks/endpoints/:endpoint_id/rotate-secret',
    operation: 'webhooks.endpoints.rotate_secret',
    idempotent: true,
    summary: 'A new signing secret (shown once); the old one keeps signing beside it for 24 hours',
    params: EndpointParams,
    response: secretResponse,
    errors: endpointErrors,
  },
  'webhooks.endpoints.ping': {
    ...base,
    method: 'POST',
    path: '/api/v1/webhooks/endpoints/:endpoint_id/ping',
    operation: 'webhooks.endpoints.ping',
    idempotent: true,
    summary: 'Send a `ping` event to the endpoint now; the answer is its delivery, still pending',
    params: EndpointParams,
    response: deliveryResponse,
    errors: [...endpointErrors, 'webhook_endpoint_disabled'],
  },
  'webhooks.deliveries.list': {
    ...base,
    method: 'GET',
    path: '/api/v1/webhooks/endpoints/:endpoint_id/deliveries',
    operation: 'webhooks.deliveries.list',
    idempotent: false,
    summary: "An endpoint's deliveries, newest first: each with its event, attempts, next attempt and final state",
    params: EndpointParams,
    query: DeliveriesQuery,
    response: z.object({ deliveries: z.array(WebhookDelivery), pagination: Pagination }),
    errors: endpointErrors,
  },
  'webhooks.deliveries.redeliver': {
    ...base,
    method: 'POST',
    path: '/api/v1/webhooks/deliveries/:delivery_id/redeliver',
    operation: 'webhooks.deliveries.redeliver',
    idempotent: true,
    summary:
      'Send a delivery again now (same event id), with three more days of retries; a delivered one is sent once more',
    params: DeliveryParams,
    response: deliveryResponse,
    errors: ['webhook_delivery_not_found', 'webhook_endpoint_disabled'],
  },
});

const TenantEndpointParams = z.object({ tenant_id: IdParam, endpoint_id: IdParam });
const operatorErrors: ErrorCode[] = ['invalid_operator_token', 'tenant_not_found'];

/** The same operations for the operator, for any tenant (the path names it). */
export const webhookAdminOperations = defineOperations({
  'admin.webhooks.endpoints.create': {
    ...admin,
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/webhooks/endpoints',
    operation: 'admin.webhooks.endpoints.create',
    summary: 'Create a webhook endpoint for a tenant; its signing secret is in this answer only',
    params: z.object({ tenant_id: IdParam }),
    body: CreateBody,
    response: z.object({ endpoint: WithSecret }),
    errors: [...operatorErrors, 'webhook_url_refused', 'webhook_endpoint_limit'],
  },
  'admin.webhooks.endpoints.list': {
    ...admin,
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/webhooks/endpoints',
    operation: 'admin.webhooks.endpoints.list',
    summary: "A tenant's webhook endpoints",
    params: z.object({ tenant_id: IdParam }),
    response: z.object({ endpoints: z.array(WebhookEndpoint) }),
    errors: operatorErrors,
  },
  'admin.webhooks.endpoints.get': {
    ...admin,
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/webhooks/endpoints/:endpoint_id',
    operation: 'admin.webhooks.endpoints.get',
    summary: "One of a tenant's webhook endpoints",
    params: TenantEndpointParams,
    response: endpointResponse,
    errors: [...operatorErrors, ...endpointErrors],
  },
  'admin.webhooks.endpoints.update': {
    ...admin,
    method: 'PATCH',
    path: '/admin/v1/tenants/:tenant_id/webhooks/endpoints/:endpoint_id',
    operation: 'admin.webhooks.endpoints.update',
    summary: "Change, disable or enable one of a tenant's webhook endpoints",
    params: TenantEndpointParams,
    body: UpdateBody,
    response: endpointResponse,
    errors: [...operatorErrors, ...endpointErrors, 'webhook_url_refused'],
  },
  'admin.webhooks.endpoints.delete': {
    ...admin,
    method: 'DELETE',
    path: '/admin/v1/tenants/:tenant_id/webhooks/endpoints/:endpoint_id',
    operation: 'admin.webhooks.endpoints.delete',
    summary: "Delete one of a tenant's webhook endpoints",
    params: TenantEndpointParams,
    response: z.object({ endpoint_id: Id, deleted: z.literal(true) }),
    errors: [...operatorErrors, ...endpointErrors],
  },
  'admin.webhooks.endpoints.rotate_secret': {
    ...admin,
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/webhooks/endpoints/:endpoint_id/rotate-secret',
    operation: 'admin.webhooks.endpoints.rotate_secret',
    summary: 'A new signing secret for an endpoint (shown once); the old one keeps signing for 24 hours',
    params: TenantEndpointParams,
    response: secretResponse,
    errors: [...operatorErrors, ...endpointErrors],
  },
  'admin.webhooks.endpoints.ping': {
    ...admin,
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/webhooks/endpoints/:endpoint_id/ping',
    operation: 'admin.webhooks.endpoints.ping',
    summary: "Send a `ping` event to one of a tenant's endpoints",
    params: TenantEndpointParams,
    response: deliveryResponse,
    errors: [...operatorErrors, ...endpointErrors, 'webhook_endpoint_disabled'],
  },
  'admin.webhooks.deliveries.list': {
    ...admin,
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/webhooks/endpoints/:endpoint_id/deliveries',
    operation: 'admin.webhooks.deliveries.list',
    summary: "The deliveries of one of a tenant's endpoints, newest first",
    params: TenantEndpointParams,
    query: DeliveriesQuery,
    response: z.object({ deliveries: z.array(WebhookDelivery), pagination: Pagination }),
    errors: [...operatorErrors, ...endpointErrors],
  },
  'admin.webhooks.deliveries.redeliver': {
    ...admin,
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/webhooks/deliveries/:delivery_id/redeliver',
    operation: 'admin.webhooks.deliveries.redeliver',
    summary: "Send one of a tenant's deliveries again now",
    params: z.object({ tenant_id: IdParam, delivery_id: IdParam }),
    response: deliveryResponse,
    errors: [...operatorErrors, 'webhook_delivery_not_found', 'webhook_endpoint_disabled'],
  },
});
