import type { OperationExample } from './types.ts';

/** Examples of the webhook operations (merged into examples.ts), for the merchant and the operator API. */
const at = '2026-03-14T09:26:53.000Z';
const later = '2026-03-14T09:27:24.000Z';
const endpoint = {
  id: 4,
  url: 'https://crm.example.com/hooks/loyalty',
  description: 'CRM sync',
  event_types: ['points.earned', 'member.registered'],
  enabled: true,
  disabled_reason: null,
  disabled_at: null,
  failing_since: null,
  secret_rotated_at: null,
  created_at: at,
  updated_at: at,
};
const secret = 'whsec_q3Fz8c1kY0o5m2WJtR7vLx9dNe4bHs6aPuGiKyTfQwE';
const delivery = {
  id: 381,
  endpoint_id: 4,
  status: 'delivered',
  event: {
    id: 'b3c1f0d2-9a4e-4e0b-8f57-2f3c9d1e7a10',
    type: 'points.earned',
    created_at: at,
    data: {
      transaction_id: 1201,
      member_id: 42,
      card_id: 2,
      points: 48,
      purchase_amount: 48,
      reference: 'till-0042',
      previous_balance: 100,
      new_balance: 148,
    },
  },
  attempts: [
    { attempted_at: at, duration_ms: 10012, http_status: null, error: 'no answer within 10000 ms' },
    { attempted_at: later, duration_ms: 38, http_status: 200, error: null },
  ],
  next_attempt_at: null,
  delivered_at: later,
  failed_at: null,
  created_at: at,
};
const pending = { ...delivery, status: 'pending', attempts: [], next_attempt_at: later, delivered_at: null };
const ping = {
  ...pending,
  id: 382,
  event: {
    id: '0f5c2a9e-8d1b-4f3a-9c6e-7b2d1a0e5f48',
    type: 'ping',
    created_at: at,
    data: { endpoint_id: 4, message: 'A test event from the loyalty platform.' },
  },
};
const create = { url: endpoint.url, event_types: endpoint.event_types, description: endpoint.description };
const rotated = {
  endpoint: { ...endpoint, secret, secret_rotated_at: at, updated_at: at },
  previous_secret_expires_at: '2026-03-15T09:26:53.000Z',
};
const page = { deliveries: [delivery], pagination: { limit: 20, offset: 0, total: 1, has_more: false } };

const shared = (prefix: string): Record<string, OperationExample> => ({
  [`${prefix}webhooks.endpoints.create`]: { request: create, response: { endpoint: { ...endpoint, secret } } },
  [`${prefix}webhooks.endpoints.list`]: { response: { endpoints: [endpoint] } },
  [`${prefix}webhooks.endpoints.get`]: { response: { endpoint } },
  [`${prefix}webhooks.endpoints.update`]: {
    request: { enabled: false },
    response: {
      endpoint: { ...endpoint, enabled: false, disabled_reason: 'manual', disabled_at: later, updated_at: later },
    },
  },
  [`${prefix}webhooks.endpoints.delete`]: { response: { endpoint_id: 4, deleted: true } },
  [`${prefix}webhooks.endpoints.rotate_secret`]: { response: rotated },
  [`${prefix}webhooks.endpoints.ping`]: { response: { delivery: ping } },
  [`${prefix}webhooks.deliveries.list`]: { response: page },
  [`${prefix}webhooks.deliveries.redeliver`]: { response: { delivery: { ...pending, attempts: delivery.attempts } } },
});

export const webhookOperationExamples: Record<string, OperationExample> = { ...shared(''), ...shared('admin.') };
