import { identityOperations } from '@loyalty/contracts';
import {
  EventBatchConsumer,
  jsonCodec,
  packageDir,
  ReplayStore,
  runService,
  ServiceClient,
  systemClock,
  type Clock,
  type Logger,
  type RunningService,
} from '@loyalty/runtime';
import type { WebhooksConfig } from './config.ts';
import { deliveryLog } from './delivery-log.ts';
import { Dispatcher } from './dispatcher.ts';
import { EndpointHealth } from './endpoint-health.ts';
import { endpointRegistry } from './endpoint-registry.ts';
import { webhooksEndpoints } from './endpoints.ts';
import { intake } from './intake.ts';
import { WebhookMetrics } from './metrics.ts';
import { OutcomeLog } from './outcome-log.ts';
import { RetryPoller } from './retry-poller.ts';
import { RouteCache } from './route-cache.ts';
import { Sender } from './sender.ts';
import { endpointsByIds, targetOf } from './store/endpoints.ts';
import { TargetGuard } from './target-guard.ts';

export const SERVICE_VERSION = '0.1.0';

/** The longest a replica routes by a tenant's endpoints as it read them (a missed broadcast). */
const ROUTE_CACHE_TTL_MS = 5_000;

export interface RunningWebhooks extends RunningService {
  /** Disable endpoints failing for three days now (it also runs every WEBHOOK_SWEEP_INTERVAL_MS). */
  sweep(): Promise<number>;
  /** Take due deliveries now (it also runs every WEBHOOK_POLL_INTERVAL_MS). */
  poll(): Promise<boolean>;
}

export interface WebhooksOptions {
  log?: Logger;
  /** Source of time for schedules, leases and expiry (tests pass a ManualClock). */
  clock?: Clock;
}

/** Composition root: config -> connections -> intake, dispatcher, poller, health -> endpoints -> shutdown. */
export async function startWebhooks(config: WebhooksConfig, opts: WebhooksOptions = {}): Promise<RunningWebhooks> {
  const clock = opts.clock ?? systemClock;
  let health: EndpointHealth | undefined;
  let poller: RetryPoller | undefined;
  const days = config.WEBHOOK_RETENTION_DAYS;
  const running = await runService({
    name: 'webhooks',
    version: SERVICE_VERSION,
    config,
    log: opts.log,
    clock: opts.clock,
    migrationsDir: packageDir(import.meta.url, '../migrations'),
    async setup({ pool, nc, subjects, log, metrics, outbox }) {
      const guard = new TargetGuard(config.WEBHOOK_ALLOW_PRIVATE_TARGETS);
      if (guard.allowPrivate) log.warn('WEBHOOK_ALLOW_PRIVATE_TARGETS=true: webhooks may go to private addresses');
      const sender = new Sender(guard, config.WEBHOOK_TIMEOUT_MS);
      const outcomes = new OutcomeLog(pool, log);
      const dispatcher = new Dispatcher({
        sender,
        outcomes,
        clock,
        log,
        metrics: new WebhookMetrics(metrics, pool, clock),
        limits: {
          endpointConcurrency: config.WEBHOOK_ENDPOINT_CONCURRENCY,
          tenantConcurrency: config.WEBHOOK_TENANT_CONCURRENCY,
          maxInFlight: config.WEBHOOK_MAX_IN_FLIGHT,
          maxQueued: config.WEBHOOK_MAX_QUEUED,
          leaseMs: config.WEBHOOK_LEASE_MS,
          timeoutMs: config.WEBHOOK_TIMEOUT_MS,
        },
        loadTargets: async (ids) => new Map((await endpointsByIds(pool, ids)).map((e) => [e.id, targetOf(e)])),
        onRoom: (endpointId) => poller?.refill(endpointId),
      });
      poller = new RetryPoller({
        pool,
        clock,
        dispatcher,
        log,
        intervalMs: config.WEBHOOK_POLL_INTERVAL_MS,
        leaseMs: config.WEBHOOK_LEASE_MS,
      });
      // Every replica forgets what it holds of a changed endpoint (URL, secrets, disabled, deleted).
      const changed = subjects.webhookEndpointsChanged();
      const routes = new RouteCache(pool, ROUTE_CACHE_TTL_MS);
      const forget = (tenantId: number, endpointId: number) => {
        routes.forget(tenantId);
        dispatcher.invalidate(endpointId);
      };
      const announce = (tenantId: number, endpointId: number) => {
        forget(tenantId, endpointId); // this replica at once, the others through the broadcast
        nc.publish(changed, jsonCodec.encode({ tenant_id: tenantId, endpoint_id: endpointId }));
      };
      const changes = nc.subscribe(changed, {
        callback: (err, msg) => {
          if (err) return;
          try {
            const m = jsonCodec.decode(msg.data) as { tenant_id?: unknown; endpoint_id?: unknown };
            const [tenant, endpoint] = [Number(m.tenant_id), Number(m.endpoint_id)];
            if (Number.isSafeInteger(tenant) && Number.isSafeInteger(endpoint)) forget(tenant, endpoint);
          } catch {
            // not ours to act on
          }
        },
      });
      // Broadcasts may be lost while the connection is down: forget every tenant's routes then.
      void (async () => {
        for await (const s of nc.status()) if (s.type === 'disconnect' || s.type === 'reconnect') routes.forget();
      })();
      health = new EndpointHealth({ pool, clock, outbox, log, intervalMs: config.WEBHOOK_SWEEP_INTERVAL_MS, announce });
      const identity = new ServiceClient(nc, subjects, { timeoutMs: config.REQUEST_TIMEOUT_MS, log });
      const replays = new ReplayStore(pool, 'webhooks');
      const endpoints = webhooksEndpoints(
        endpointRegistry({
          pool,
          clock,
          guard,
          replays,
          maxEndpointsPerTenant: config.WEBHOOK_MAX_ENDPOINTS_PER_TENANT,
          announce,
        }),
        deliveryLog({ pool, clock, replays, dispatcher, leaseMs: config.WEBHOOK_LEASE_MS }),
        async (tenantId, requestId) =>
          void (await identity.call(identityOperations.getTenant, { request_id: requestId, tenant_id: tenantId }, {})),
      );
      // Every domain event of the stream; the intake keeps those a public type is made from.
      const consumer = new EventBatchConsumer({
        nc,
        subjects,
        durable: 'webhooks-intake',
        filterSubject: subjects.allEvents(),
        log,
        metrics,
        handle: intake({ pool, clock, dispatcher, routes, log, leaseMs: config.WEBHOOK_LEASE_MS }),
        // A few milliseconds of events per batch: one acknowledgement write for all of them.
        lingerMs: 5,
      });
      await consumer.start();
      poller.start();
      health.start();
      return {
        endpoints,
        purge: [
          // The delivery log, once nothing of an event is pending any more (cascades to deliveries and attempts).
          {
            table: 'events',
            expired: `received_at < $1::timestamptz - interval '${days} days'
              AND NOT EXISTS (SELECT 1 FROM webhooks.deliveries d WHERE d.event_id = events.id AND d.status = 'pending')`,
          },
          { table: 'endpoints', expired: `deleted_at < $1::timestamptz - interval '${days} days'` },
        ],
        stop: async () => {
          // No new work in, then what is held is handed back and what is in flight finishes.
          await consumer.stop();
          await poller?.stop();
          await health?.stop();
          await dispatcher.stop();
          await outcomes.flushed();
          changes.unsubscribe();
          await sender.close();
        },
      };
    },
  });
  return { ...running, sweep: () => health!.sweep(), poll: () => poller!.pass() };
}
