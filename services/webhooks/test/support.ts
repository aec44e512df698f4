import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { apiClient, type TestSystem } from '../../../test/support/system.ts';

export type Api = ReturnType<typeof apiClient>;

/** Every scope, webhooks_manage included. */
export const ALL_SCOPES = [
  'points_read',
  'points_write',
  'cashback_read',
  'cashback_write',
  'card_read',
  'webhooks_manage',
  'members_manage',
];

/** A sandbox tenant with an app holding every scope, its API client and a points and a cashback card. */
export async function merchant(sys: TestSystem, opts: { contactEmail?: string } = {}) {
  const t = await sys.tenant({ scopes: ALL_SCOPES });
  if (opts.contactEmail)
    await sys.admin('PATCH', `/admin/v1/tenants/${t.tenantId}`, { contact_email: opts.contactEmail });
  const api = apiClient(sys.url, t);
  const points = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${t.tenantId}/cards`, {
    name: 'Points card',
    reward_system: 'points',
    points_ratio: 1,
    referrer_bonus: 100,
    referee_bonus: 50,
    transfers_enabled: true,
  });
  const cashback = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${t.tenantId}/cards`, {
    name: 'Cashback card',
    reward_system: 'cashback',
    currency: 'EUR',
    cashback_config: { cashback_percentage: 10 },
  });
  return { ...t, api, pointsCard: points.card.id, cashbackCard: cashback.card.id };
}

export interface CreatedEndpoint {
  id: number;
  secret: string;
  url: string;
  event_types: string[];
}

/** Create an endpoint through the API (201-like 200), answering it with its secret. */
export async function endpoint(api: Api, url: string, eventTypes: string[] = ['*']): Promise<CreatedEndpoint> {
  const r = await api('POST', '/api/v1/webhooks/endpoints', {
    body: { url, event_types: eventTypes },
    headers: { 'idempotency-key': randomUUID() },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data!.endpoint as CreatedEndpoint;
}

let n = 0;
/** A points earn for a new member (created by the earn: a `member.registered` too). */
export async function earn(
  api: Api,
  cardId: number,
  amount = 42,
): Promise<{ member_id: number; transaction_id: number; earned_at: string }> {
  n += 1;
  const r = await api('POST', '/api/v1/loyalty/points/earn', {
    body: {
      card_id: cardId,
      email: `hook${n}.${process.pid}.${Date.now()}@example.com`,
      member_name: 'Webhook Member',
      purchase_amount: amount,
      reference: `order-${randomUUID()}`,
    },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data as { member_id: number; transaction_id: number; earned_at: string };
}

/** Wait for asynchronous work to show; never a fixed sleep. */
export async function eventually<T>(read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
