import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookOperations } from '@loyalty/contracts';
import { connectAs } from '../../../test/support/nats.ts';
import { newTenantId, publicMeta, startService, type ServiceRunner } from '../../../test/support/service-runner.ts';
import { WebhookReceiver } from '../../../test/support/webhook-receiver.ts';
import { RETRY_WINDOW_MS } from '../src/domain/retry-schedule.ts';
import { pointsEarned, publishEvents } from './events.ts';
import { eventually } from './support.ts';

/**
 * The delivery engine on the webhooks service alone (real PostgreSQL, NATS, HTTP receivers): domain
 * events are published on the stream as the services' outbox relays do, and the test reads the
 * delivery log from the database.
 */
let hooks: ServiceRunner<'webhooks'>;
let nc: NatsConnection;
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  hooks = await startService('webhooks', {
    env: {
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_TIMEOUT_MS: '1500',
      WEBHOOK_ENDPOINT_CONCURRENCY: '2',
      WEBHOOK_POLL_INTERVAL_MS: '100',
      // The metrics test below looks for its own tenant among the many this file leaves pending.
      WEBHOOK_METRICS_TOP_TENANTS: '100',
    },
  });
  nc = await connectAs('admin');
});
afterAll(async () => {
  await nc?.close();
  for (const r of receivers) await r.stop();
  await hooks?.stop();
});

async function receiver(): Promise<WebhookReceiver> {
  const r = await new WebhookReceiver().start();
  receivers.push(r);
  return r;
}

async function createEndpoint(tenantId: number, url: string, eventTypes: ('*' | 'points.earned')[] = ['*']) {
  const { endpoint } = await hooks.request(webhookOperations['webhooks.endpoints.create'], publicMeta(tenantId), {
    url,
    event_types: eventTypes,
  });
  return endpoint;
}

interface DeliveryRow {
  id: number;
  status: string;
  attempt_count: number;
  next_attempt_at: Date | null;
  expires_at: Date;
  last_error: string | null;
}

async function deliveriesOf(endpointId: number): Promise<DeliveryRow[]> {
  const { rows } = await hooks.db.query<DeliveryRow>(
    `SELECT id, status, attempt_count, next_attempt_at, expires_at, last_error FROM webhooks.deliveries WHERE endpoint_id = $1 ORDER BY id`,
    [endpointId],
  );
  return rows;
}

async function attemptsOf(deliveryId: number) {
  const { rows } = await hooks.db.query<{ attempted_at: Date; http_status: number | null; error: string | null }>(
    `SELECT attempted_at, http_status, error FROM webhooks.attempts WHERE delivery_id = $1 ORDER BY attempted_at`,
    [deliveryId],
  );
  return rows;
}

describe('delivery engine', () => {
  it("one tenant's hanging endpoint does not hold up another tenant's deliveries", async () => {
    const [stuck, healthy] = [await receiver(), await receiver()];
    stuck.respond(() => ({ hang: true }));
    const [a, b] = [newTenantId(), newTenantId()];
    await createEndpoint(a, stuck.url());
    await createEndpoint(b, healthy.url());
    const now = hooks.clock.now();
    // The stuck tenant's burst is on the stream first.
    await publishEvents(nc, hooks.subjects, [...Array.from({ length: 60 }, () => pointsEarned(a, now))]);
    await publishEvents(nc, hooks.subjects, [...Array.from({ length: 60 }, () => pointsEarned(b, now))]);
    const got = await healthy.waitFor(() => true, 60);
    expect(new Set(got.map((r) => r.event.id)).size).toBe(60);
    // Meanwhile the stuck endpoint holds no more than its own two slots.
    expect(stuck.received.length).toBeLessThanOrEqual(2);
  });

  it('a burst larger than a lane waits in the database and the lane asks for it as it empties', async () => {
    // A replica whose periodic poll is far away: only the lane's own refills can bring the rest.
    const lone = await startService('webhooks', {
      env: {
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
        WEBHOOK_ENDPOINT_CONCURRENCY: '2',
        WEBHOOK_POLL_INTERVAL_MS: '60000',
      },
    });
    try {
      const r = await receiver();
      const tenant = newTenantId();
      const { endpoint } = await lone.request(webhookOperations['webhooks.endpoints.create'], publicMeta(tenant), {
        url: r.url(),
        event_types: ['*'],
      });
      const burst = Array.from({ length: 400 }, () => pointsEarned(tenant, lone.clock.now()));
      await publishEvents(nc, lone.subjects, burst);
      const got = await r.waitFor(() => true, 400, 30_000);
      expect(new Set(got.map((x) => x.event.id)).size).toBe(400);
      // A lane of concurrency 2 holds 40 at first: most of the burst waited in the database, and
      // came within seconds although this replica polls once a minute.
      await eventually(
        async () =>
          (
            await lone.db.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM webhooks.deliveries WHERE endpoint_id = $1 AND status = 'delivered'`,
              [endpoint.id],
            )
          ).rows[0]!.n,
        (n) => n === 400,
      );
    } finally {
      await lone.stop();
    }
  });

  it("every replica learns of a new endpoint at once, though it remembered the tenant's routes as none", async () => {
    const second = await hooks.replica();
    try {
      const r = await receiver();
      const tenant = newTenantId();
      // Both replicas see the tenant's events (they share the durable) and remember: no endpoints.
      const jsm = await nc.jetstreamManager();
      const drained = async () => {
        const info = await jsm.consumers.info(hooks.subjects.streamName(), `${hooks.subjects.root}-webhooks-intake`);
        return info.num_pending + info.num_ack_pending;
      };
      await publishEvents(
        nc,
        hooks.subjects,
        Array.from({ length: 40 }, () => pointsEarned(tenant, hooks.clock.now())),
      );
      await eventually(drained, (n) => n === 0);
      await createEndpoint(tenant, r.url());
      const after = Array.from({ length: 40 }, () => pointsEarned(tenant, hooks.clock.now()));
      await publishEvents(nc, hooks.subjects, after);
      const got = await r.waitFor(() => true, 40, 10_000);
      expect(new Set(got.map((x) => x.event.id))).toEqual(new Set(after.map((e) => e.id)));
    } finally {
      await second.stop();
    }
  });

  it('retries a failing delivery with growing, jittered gaps for three days, then gives it up', async () => {
    const failing = await receiver();
    failing.respond(() => ({ status: 503 }));
    const tenant = newTenantId();
    const ep = await createEndpoint(tenant, failing.url());
    await publishEvents(nc, hooks.subjects, [pointsEarned(tenant, hooks.clock.now())]);
    let [d] = await eventually(
      () => deliveriesOf(ep.id),
      (rows) => rows[0]?.attempt_count === 1,
    );
    const createdAt = hooks.clock.now().getTime();
    while (d!.status === 'pending') {
      const before = d!.attempt_count;
      // Jump to the next attempt and take it now.
      hooks.clock.advance(Math.max(0, d!.next_attempt_at!.getTime() - hooks.clock.now().getTime()) + 1_000);
      await hooks.service.hooks.poll();
      [d] = await eventually(
        () => deliveriesOf(ep.id),
        (rows) => rows[0]!.attempt_count > before || rows[0]!.status !== 'pending',
      );
    }
    expect(d!.status).toBe('failed');
    const attempts = await attemptsOf(d!.id);
    expect(attempts.every((a) => a.http_status === 503)).toBe(true);
    expect(failing.received.length).toBe(attempts.length);
    expect(new Set(failing.received.map((r) => r.event.id)).size).toBe(1); // the same event every time
    const gaps = attempts.slice(1).map((a, i) => a.attempted_at.getTime() - attempts[i]!.attempted_at.getTime());
    // 15-30 s first, then doubling up to the 6 h cap (3-6 h with jitter), until the expiry.
    expect(gaps[0]).toBeGreaterThanOrEqual(15_000);
    expect(gaps[0]).toBeLessThan(32_000);
    expect(gaps[5]!).toBeGreaterThan(gaps[0]!);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(6 * 3600_000 + 2_000);
    const last = attempts.at(-1)!.attempted_at.getTime();
    expect(last - createdAt).toBeGreaterThanOrEqual(RETRY_WINDOW_MS - 60_000);
    expect(attempts.length).toBeGreaterThan(12);
    expect(attempts.length).toBeLessThan(40);
  }, 120_000);

  it('fails an attempt that gets no answer within the timeout, and one that redirects; reads a big answer only in part', async () => {
    const hanging = await receiver();
    hanging.respond(() => ({ hang: true }));
    // A 200 with an endless body: delivered, without reading it to its end.
    const endless = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = () => {
        while (res.write(chunk));
        res.once('drain', pump);
      };
      pump();
    });
    await new Promise<void>((r) => endless.listen(0, '127.0.0.1', r));
    const redirect = await receiver();
    redirect.respond(() => ({ status: 302 }));
    const tenant = newTenantId();
    const hangs = await createEndpoint(tenant, hanging.url());
    const streams = await createEndpoint(tenant, `http://127.0.0.1:${(endless.address() as AddressInfo).port}/`);
    const redirects = await createEndpoint(tenant, redirect.url());
    await publishEvents(nc, hooks.subjects, [pointsEarned(tenant, hooks.clock.now())]);
    const [timedOut] = await eventually(
      () => deliveriesOf(hangs.id),
      (rows) => rows[0]?.attempt_count === 1,
    );
    expect(timedOut!.last_error).toBe('no answer within 1500 ms');
    expect((await attemptsOf(timedOut!.id))[0]!.http_status).toBeNull();
    const [streamed] = await eventually(
      () => deliveriesOf(streams.id),
      (rows) => rows[0]?.status === 'delivered',
    );
    expect(streamed!.attempt_count).toBe(1);
    const [redirected] = await eventually(
      () => deliveriesOf(redirects.id),
      (rows) => rows[0]?.attempt_count === 1,
    );
    expect(redirected).toMatchObject({ status: 'pending', last_error: 'HTTP 302' });
    endless.closeAllConnections();
    await new Promise((r) => endless.close(r));
  });

  it('creates one delivery per event and endpoint, even when the stream delivers the event twice', async () => {
    const r = await receiver();
    const tenant = newTenantId();
    const ep = await createEndpoint(tenant, r.url());
    const event = pointsEarned(tenant, hooks.clock.now());
    // Two publications of one event (as after a relay crash outside the duplicate window).
    await publishEvents(nc, hooks.subjects, [event], () => `${event.id}-1`);
    await publishEvents(nc, hooks.subjects, [event], () => `${event.id}-2`);
    const marker = pointsEarned(tenant, hooks.clock.now());
    await publishEvents(nc, hooks.subjects, [marker]);
    await r.waitFor((x) => x.event.id === marker.id);
    const rows = await eventually(
      () => deliveriesOf(ep.id),
      (x) => x.length === 2 && x.every((d) => d.status === 'delivered'),
    );
    expect(rows).toHaveLength(2);
    expect(r.received.filter((x) => x.event.id === event.id)).toHaveLength(1);
  });

  it('skips a domain event that breaks its documented payload and delivers the rest of its batch', async () => {
    const r = await receiver();
    const tenant = newTenantId();
    await createEndpoint(tenant, r.url());
    const broken = pointsEarned(tenant, hooks.clock.now());
    delete broken.data.points;
    const fine = pointsEarned(tenant, hooks.clock.now());
    await publishEvents(nc, hooks.subjects, [broken, fine]);
    await r.waitFor((x) => x.event.id === fine.id);
    expect(r.received.some((x) => x.event.id === broken.id)).toBe(false);
  });

  it('does not send a new endpoint what happened before it existed', async () => {
    const r = await receiver();
    const tenant = newTenantId();
    const old = pointsEarned(tenant, new Date(hooks.clock.now().getTime() - 60_000));
    await createEndpoint(tenant, r.url());
    const fresh = pointsEarned(tenant, hooks.clock.now());
    await publishEvents(nc, hooks.subjects, [old, fresh]);
    await r.waitFor((x) => x.event.id === fresh.id);
    expect(r.received.some((x) => x.event.id === old.id)).toBe(false);
  });

  it('disables an endpoint that failed every delivery for three days, gives up its pending deliveries and records the event', async () => {
    const failing = await receiver();
    failing.respond(() => ({ status: 500 }));
    const tenant = newTenantId();
    const ep = await createEndpoint(tenant, failing.url());
    await publishEvents(nc, hooks.subjects, [pointsEarned(tenant, hooks.clock.now())]);
    await eventually(
      () => deliveriesOf(ep.id),
      (rows) => rows[0]?.attempt_count === 1,
    );
    // The retry poller (every 100 ms here) would try the delivery again once the clock jumps by
    // days, and could give it up on its own ('HTTP 500') before the sweep below gets to it: hold
    // its next retry beyond the jumps, so what the sweep does is what this test reads.
    await hooks.db.query(
      `UPDATE webhooks.deliveries SET next_attempt_at = $2::timestamptz + interval '10 days' WHERE endpoint_id = $1`,
      [ep.id, hooks.clock.now()],
    );
    // Earlier tests' failing endpoints are swept too; this one is disabled only after three days.
    const enabled = async () =>
      (await hooks.db.query(`SELECT enabled FROM webhooks.endpoints WHERE id = $1`, [ep.id])).rows[0].enabled;
    await hooks.service.hooks.sweep();
    expect(await enabled()).toBe(true); // failing, but not for three days yet
    hooks.clock.advance(RETRY_WINDOW_MS - 60_000);
    await hooks.service.hooks.sweep();
    expect(await enabled()).toBe(true);
    const disabledTotal = async () => {
      const text = await (await fetch(`http://127.0.0.1:${hooks.service.opsPort}/metrics`)).text();
      return Number(/^loyalty_webhook_endpoints_disabled_total\{[^}]*\} (\d+)$/m.exec(text)?.[1]);
    };
    const disabledBefore = await disabledTotal();
    hooks.clock.advance(120_000);
    const swept = await hooks.service.hooks.sweep();
    expect(swept).toBeGreaterThanOrEqual(1);
    expect(await enabled()).toBe(false);
    expect(await disabledTotal()).toBe(disabledBefore + swept);
    const { endpoint } = await hooks.request(webhookOperations['webhooks.endpoints.get'], publicMeta(tenant), {
      endpoint_id: ep.id,
    });
    expect(endpoint).toMatchObject({ enabled: false, disabled_reason: 'failing' });
    const [d] = await deliveriesOf(ep.id);
    expect(d).toMatchObject({ status: 'failed', last_error: 'the endpoint was disabled after three days of failures' });
    const { rows } = await hooks.db.query<{ payload: { type: string; data: Record<string, unknown> } }>(
      `SELECT payload FROM webhooks.outbox WHERE payload->>'type' = 'webhooks.endpoint_disabled'`,
    );
    expect(rows.map((r) => r.payload.data)).toContainEqual(
      expect.objectContaining({ endpoint_id: ep.id, url: ep.url, last_error: 'HTTP 500' }),
    );
    // Nothing more goes to it.
    const before = failing.received.length;
    const marker = await receiver();
    await createEndpoint(tenant, marker.url());
    const after = pointsEarned(tenant, hooks.clock.now());
    await publishEvents(nc, hooks.subjects, [after]);
    await marker.waitFor((x) => x.event.id === after.id);
    expect(failing.received.length).toBe(before);
  });

  it('a success ends a failure streak: an endpoint that works now and then is never disabled', async () => {
    const flaky = await receiver();
    flaky.respond((_r, n) => ({ status: n === 2 ? 200 : 500 }));
    const tenant = newTenantId();
    const ep = await createEndpoint(tenant, flaky.url());
    await publishEvents(nc, hooks.subjects, [pointsEarned(tenant, hooks.clock.now())]);
    await eventually(
      () => hooks.db.query(`SELECT failing_since FROM webhooks.endpoints WHERE id = $1`, [ep.id]),
      (r) => r.rows[0].failing_since !== null,
    );
    await publishEvents(nc, hooks.subjects, [pointsEarned(tenant, hooks.clock.now())]);
    await eventually(
      () => hooks.db.query(`SELECT failing_since FROM webhooks.endpoints WHERE id = $1`, [ep.id]),
      (r) => r.rows[0].failing_since === null,
    );
    hooks.clock.advance(RETRY_WINDOW_MS + 60_000);
    await hooks.service.hooks.sweep();
    const { rows } = await hooks.db.query(`SELECT enabled FROM webhooks.endpoints WHERE id = $1`, [ep.id]);
    expect(rows[0].enabled).toBe(true);
  });

  it('takes back deliveries whose lease ran out (a replica died holding them)', async () => {
    const r = await receiver();
    const tenant = newTenantId();
    const ep = await createEndpoint(tenant, r.url());
    // A delivery another replica took and never finished: pending, its lease over.
    const event = pointsEarned(tenant, hooks.clock.now());
    const body = JSON.stringify({
      id: event.id,
      type: 'points.earned',
      created_at: event.occurred_at,
      tenant_id: tenant,
      data: {},
    });
    await hooks.db.query(
      `INSERT INTO webhooks.events (id, tenant_id, type, body, created_at, received_at) VALUES ($1, $2, 'points.earned', $3, now(), now())`,
      [event.id, tenant, body],
    );
    await hooks.db.query(
      `INSERT INTO webhooks.deliveries (tenant_id, endpoint_id, event_id, next_attempt_at, expires_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $4)`,
      [
        tenant,
        ep.id,
        event.id,
        new Date(hooks.clock.now().getTime() - 1_000),
        new Date(hooks.clock.now().getTime() + RETRY_WINDOW_MS),
      ],
    );
    const [got] = await r.waitFor((x) => x.event.id === event.id);
    expect(got!.body).toBe(body);
  });

  it('purges the delivery log and deleted endpoints after the retention, never what is still pending', async () => {
    const r = await receiver();
    const tenant = newTenantId();
    const kept = await createEndpoint(tenant, r.url());
    const gone = await createEndpoint(tenant, r.url('/gone'));
    const event = pointsEarned(tenant, hooks.clock.now());
    await publishEvents(nc, hooks.subjects, [event]);
    await eventually(
      () => deliveriesOf(kept.id),
      (rows) => rows[0]?.status === 'delivered',
    );
    await hooks.request(webhookOperations['webhooks.endpoints.delete'], publicMeta(tenant), { endpoint_id: gone.id });
    const count = async (sql: string, params: unknown[]) =>
      (await hooks.db.query<{ n: number }>(sql, params)).rows[0]!.n;
    hooks.clock.advance(29 * 24 * 3600_000);
    await hooks.service.purgeNow();
    expect(await count(`SELECT count(*)::int AS n FROM webhooks.events WHERE id = $1`, [event.id])).toBe(1);
    hooks.clock.advance(2 * 24 * 3600_000);
    const deleted = await hooks.service.purgeNow();
    expect(deleted.events).toBeGreaterThanOrEqual(1);
    expect(deleted.endpoints).toBeGreaterThanOrEqual(1);
    expect(await count(`SELECT count(*)::int AS n FROM webhooks.events WHERE id = $1`, [event.id])).toBe(0);
    // The cascade took its deliveries and attempts; the deleted endpoint is gone, the kept one stays.
    expect(await count(`SELECT count(*)::int AS n FROM webhooks.deliveries WHERE event_id = $1`, [event.id])).toBe(0);
    expect(
      await count(`SELECT count(*)::int AS n FROM webhooks.endpoints WHERE id = ANY($1)`, [[kept.id, gone.id]]),
    ).toBe(1);
    // An event with a pending delivery is kept however old it is.
    const stuck = await receiver();
    stuck.respond(() => ({ hang: true }));
    await createEndpoint(tenant, stuck.url());
    const pending = pointsEarned(tenant, hooks.clock.now());
    await publishEvents(nc, hooks.subjects, [pending]);
    await stuck.waitFor(() => true);
    // Its event received long ago (a redelivery keeps an old event pending for three more days).
    await hooks.db.query(`UPDATE webhooks.events SET received_at = received_at - interval '40 days' WHERE id = $1`, [
      pending.id,
    ]);
    await hooks.service.purgeNow();
    expect(await count(`SELECT count(*)::int AS n FROM webhooks.events WHERE id = $1`, [pending.id])).toBe(1);
  });

  it('reports attempts by outcome, attempt time and the backlog per tenant in /metrics (after the tests above)', async () => {
    // A delivery in flight to a hanging endpoint: pending.
    const hanging = await receiver();
    hanging.respond(() => ({ hang: true }));
    const tenant = newTenantId();
    await createEndpoint(tenant, hanging.url());
    await publishEvents(nc, hooks.subjects, [pointsEarned(tenant, hooks.clock.now())]);
    await hanging.waitFor(() => true);
    const res = await fetch(`http://127.0.0.1:${hooks.service.opsPort}/metrics`);
    const text = await res.text();
    expect(text).toMatch(/loyalty_webhook_attempts_total\{outcome="delivered",service="webhooks"\} [1-9]/);
    expect(text).toMatch(/loyalty_webhook_attempts_total\{outcome="timeout",service="webhooks"\} [1-9]/);
    expect(text).toMatch(/loyalty_webhook_attempts_total\{outcome="http_error",service="webhooks"\} [1-9]/);
    expect(text).toMatch(/loyalty_webhook_attempt_duration_seconds_count\{service="webhooks"\} [1-9]/);
    expect(text).toMatch(/loyalty_webhook_deliveries_total\{outcome="failed",service="webhooks"\} [1-9]/);
    expect(text).toMatch(/loyalty_webhook_event_to_delivery_seconds_count\{[^}]*attempt="first"[^}]*\} [1-9]/);
    expect(text).toContain(`loyalty_webhook_backlog{tenant="${tenant}",service="webhooks"} 1`);
    expect(text).toMatch(
      new RegExp(`loyalty_webhook_oldest_pending_age_seconds\\{tenant="${tenant}",service="webhooks"\\} \\d`),
    );
    expect(text).toMatch(/loyalty_consumer_pending\{consumer="webhooks-intake",service="webhooks"\} \d/);
  });
});
