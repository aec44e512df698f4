import { returnedRow, traceparentOf } from '@loyalty/runtime';
import { randomUUID } from 'node:crypto';
import { AppError, type WebhookDelivery } from '@loyalty/contracts';
import type { Clock, Pool, PoolClient, ReplayStore } from '@loyalty/runtime';
import type { Dispatcher } from './dispatcher.ts';
import { envelope } from './domain/payload.ts';
import { RETRY_WINDOW_MS } from './domain/retry-schedule.ts';
import type { Caller } from './endpoint-registry.ts';
import { findDelivery, insertDeliveries, leaseDelivery, listDeliveries, type Job } from './store/deliveries.ts';
import { findEndpoint } from './store/endpoints.ts';
import { deliveryView } from './views.ts';

export interface DeliveryLogDeps {
  pool: Pool;
  clock: Clock;
  replays: ReplayStore;
  dispatcher: Dispatcher;
  leaseMs: number;
}

type DeliveryReply = { delivery: WebhookDelivery };

/**
 * The delivery log of an endpoint, and the two ways to send something now: a `ping` event, and a
 * redelivery of an existing delivery (same event, same id; three more days of retries). Both lease
 * the delivery to this replica in their transaction and hand it to its dispatcher after the commit.
 */
export function deliveryLog(deps: DeliveryLogDeps) {
  const { pool, clock, replays, dispatcher } = deps;

  /** Run `make` once under the caller's key; a replayed answer sends nothing again. */
  async function sendNow(
    c: Caller,
    operation: string,
    data: unknown,
    make: (now: Date, leaseUntil: Date) => (db: PoolClient) => Promise<{ reply: DeliveryReply; job: Job }>,
  ): Promise<DeliveryReply> {
    let job: Job | undefined;
    const reply = await replays.run({ tenantId: c.tenantId, key: c.idempotencyKey, operation, data }, async (db) => {
      const now = clock.now();
      const made = await make(now, new Date(now.getTime() + deps.leaseMs))(db);
      job = made.job;
      return made.reply;
    });
    if (job) dispatcher.accept([job]);
    return reply;
  }

  return {
    async list(c: Caller, d: { endpoint_id: number; status?: string; limit: number; offset: number }) {
      if (!(await findEndpoint(pool, c.tenantId, d.endpoint_id))) throw new AppError('webhook_endpoint_not_found');
      const { deliveries, total } = await listDeliveries(pool, d.endpoint_id, d);
      return {
        deliveries: deliveries.map(deliveryView),
        pagination: { limit: d.limit, offset: d.offset, total, has_more: d.offset + deliveries.length < total },
      };
    },

    ping(c: Caller, d: { endpoint_id: number }): Promise<DeliveryReply> {
      return sendNow(
        c,
        'webhooks.endpoints.ping',
        d,
        (now, leaseUntil) => (db) => insertPing(db, c.tenantId, d.endpoint_id, now, leaseUntil),
      );
    },

    redeliver(c: Caller, d: { delivery_id: number }): Promise<DeliveryReply> {
      return sendNow(
        c,
        'webhooks.deliveries.redeliver',
        d,
        (now, leaseUntil) => (db) => leaseRedelivery(db, c.tenantId, d.delivery_id, now, leaseUntil),
      );
    },
  };
}

/** A `ping` event for one enabled endpoint and its delivery, leased to this replica until `leaseUntil`. */
async function insertPing(
  db: PoolClient,
  tenantId: number,
  endpointId: number,
  now: Date,
  leaseUntil: Date,
): Promise<{ reply: DeliveryReply; job: Job }> {
  const endpoint = await findEndpoint(db, tenantId, endpointId);
  if (!endpoint) throw new AppError('webhook_endpoint_not_found');
  if (!endpoint.enabled) throw new AppError('webhook_endpoint_disabled');
  const event = envelope(randomUUID(), 'ping', tenantId, now, {
    endpoint_id: endpoint.id,
    message: 'A test event from the loyalty platform.',
  });
  // The ping's attempt is a span of the request's trace (tracing on).
  const trace = traceparentOf() ?? null;
  const inserted = await insertDeliveries(
    db,
    [{ event: { ...event, trace }, endpointId: endpoint.id, nextAttemptAt: leaseUntil }],
    now,
    RETRY_WINDOW_MS,
  );
  const deliveryId = returnedRow(inserted, 'the insert of the ping delivery').id;
  const found = await findDelivery(db, tenantId, deliveryId);
  const delivery = returnedRow(found ? [found] : [], 'the read of the ping delivery just inserted');
  return {
    reply: { delivery: deliveryView(delivery) },
    job: {
      deliveryId,
      tenantId,
      endpointId: endpoint.id,
      eventId: event.id,
      type: event.type,
      body: event.body,
      attempts: 0,
      expiresAt: new Date(now.getTime() + RETRY_WINDOW_MS),
      eventCreatedAt: now,
      leaseUntil,
      trace,
    },
  };
}

/** An existing delivery of an enabled endpoint, due again (three more days), leased to this replica. */
async function leaseRedelivery(
  db: PoolClient,
  tenantId: number,
  deliveryId: number,
  now: Date,
  leaseUntil: Date,
): Promise<{ reply: DeliveryReply; job: Job }> {
  const found = await findDelivery(db, tenantId, deliveryId);
  // A delivery of a deleted endpoint is gone with it.
  const endpoint = found && (await findEndpoint(db, tenantId, found.endpoint_id, true));
  if (!found || !endpoint) throw new AppError('webhook_delivery_not_found');
  if (!endpoint.enabled) throw new AppError('webhook_endpoint_disabled');
  const job = await leaseDelivery(db, tenantId, deliveryId, leaseUntil, new Date(now.getTime() + RETRY_WINDOW_MS));
  const delivery = await findDelivery(db, tenantId, deliveryId);
  // Gone since it was read (its endpoint deleted meanwhile).
  if (!job || !delivery) throw new AppError('webhook_delivery_not_found');
  return { reply: { delivery: deliveryView(delivery) }, job };
}

export type DeliveryLog = ReturnType<typeof deliveryLog>;
