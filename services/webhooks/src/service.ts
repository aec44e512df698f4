import { webhooksTenantTables } from './tenant-tables.ts';
import { identityOperations } from '@loyalty/contracts';
import {
  packageDir,
  ReplayStore,
  runService,
  ServiceClient,
  type Clock,
  type Logger,
  type Pool,
  type RunningService,
  type ServiceDeclaration,
  type ServiceRuntime,
} from '@loyalty/runtime';
import type { WebhooksConfig } from './config.ts';
import { webhooksConsumers } from './consumers.ts';
import { deliveryLog } from './delivery-log.ts';
import { Dispatcher } from './dispatcher.ts';
import { endpointRegistry } from './endpoint-registry.ts';
import { webhooksEndpoints } from './endpoints.ts';
import { webhooksMemberData } from './member-data.ts';
import { WebhookMetrics } from './metrics.ts';
import { OutcomeLog } from './outcome-log.ts';
import { RouteCache } from './route-cache.ts';
import { masterKey } from './domain/envelope.ts';
import { SecretBox, SecretsKeeper } from './secret-box.ts';
import { Sender } from './sender.ts';
import { endpointsByIds, targetOf, type Target } from './store/endpoints.ts';
import { TargetGuard } from './target-guard.ts';
import { webhooksTasks } from './tasks.ts';

export const SERVICE_VERSION = '0.1.0';

/** The longest a replica routes by a tenant's endpoints as it read them (a missed broadcast). */
const ROUTE_CACHE_TTL_MS = 5_000;

export interface WebhooksHooks {
  /** Disable endpoints failing for three days now (it also runs every WEBHOOK_SWEEP_INTERVAL_MS). */
  sweep(): Promise<number>;
  /** Take due deliveries now (it also runs every WEBHOOK_POLL_INTERVAL_MS). */
  poll(): Promise<boolean>;
  /** Seal secrets still in plaintext and rewrap data keys under the current SECRETS_KEY now: rows handled. */
  keepSecrets(): Promise<number>;
}

export type RunningWebhooks = RunningService<WebhooksHooks>;

export interface WebhooksOptions {
  log?: Logger;
  /** Source of time for schedules, leases and expiry (tests pass a ManualClock). */
  clock?: Clock;
}

/** Composition root: intake and the endpoints-changed broadcast, dispatcher, poller, health, endpoints. */
export function startWebhooks(config: WebhooksConfig, opts: WebhooksOptions = {}): Promise<RunningWebhooks> {
  return runService(
    {
      name: 'webhooks',
      version: SERVICE_VERSION,
      migrationsDir: packageDir(import.meta.url, '../migrations'),
      setup: (rt) => setupWebhooks(rt, config),
    },
    { config, ...opts },
  );
}

/** The endpoints' targets, with their secrets opened (signing needs them in plaintext, in memory only). */
async function loadTargets(pool: Pool, box: SecretBox, ids: number[]): Promise<Map<number, Target>> {
  const targets = new Map<number, Target>();
  for (const e of await endpointsByIds(pool, ids))
    targets.set(e.id, await targetOf(e, (stored) => box.open(pool, e.tenant_id, stored)));
  return targets;
}

/**
 * The secrets at rest: the box that seals and opens them, the keeper that seals old rows and
 * rewraps data keys, and the replay store whose stored answers (creations and rotations answer
 * the secret) are sealed like the secrets.
 */
function secretsOf(rt: ServiceRuntime, config: WebhooksConfig) {
  const { pool, clock, log, metrics } = rt;
  const box = new SecretBox(
    masterKey(config.SECRETS_KEY),
    config.SECRETS_KEY_PREVIOUS && masterKey(config.SECRETS_KEY_PREVIOUS),
  );
  const keeper = new SecretsKeeper({ box, pool, clock, log, metrics, intervalMs: SECRETS_INTERVAL_MS });
  const sealedReplays = new ReplayStore(pool, 'webhooks', {
    seal: (db, tenantId, text) => box.seal(db, tenantId, text),
    open: (db, tenantId, stored) => box.open(db, tenantId, stored),
  });
  return { box, keeper, sealedReplays };
}

/** The delivery log, once nothing of an event is pending any more (cascades to deliveries and attempts), and deleted endpoints. */
function purgeRules(days: number) {
  return [
    {
      table: 'events',
      expired: `received_at < $1::timestamptz - interval '${days} days'
          AND NOT EXISTS (SELECT 1 FROM webhooks.deliveries d WHERE d.event_id = events.id AND d.status = 'pending')`,
    },
    { table: 'endpoints', expired: `deleted_at < $1::timestamptz - interval '${days} days'` },
  ];
}

/** How often each replica looks for secrets to seal or data keys to rewrap (it also does at start). */
const SECRETS_INTERVAL_MS = 10 * 60_000;

function dispatcherOf(
  rt: ServiceRuntime,
  config: WebhooksConfig,
  deps: { sender: Sender; box: SecretBox; onRoom: (id: number) => void },
) {
  const { sender, box, onRoom } = deps;
  const { pool, clock, log, metrics } = rt;
  const outcomes = new OutcomeLog(pool, log);
  const dispatcher = new Dispatcher({
    sender,
    outcomes,
    clock,
    log,
    metrics: new WebhookMetrics(metrics, pool, clock, config.WEBHOOK_METRICS_TOP_TENANTS),
    limits: {
      endpointConcurrency: config.WEBHOOK_ENDPOINT_CONCURRENCY,
      tenantConcurrency: config.WEBHOOK_TENANT_CONCURRENCY,
      maxInFlight: config.WEBHOOK_MAX_IN_FLIGHT,
      maxQueued: config.WEBHOOK_MAX_QUEUED,
      leaseMs: config.WEBHOOK_LEASE_MS,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    },
    loadTargets: (ids) => loadTargets(pool, box, ids),
    onRoom,
  });
  return { dispatcher, outcomes };
}

async function setupWebhooks(rt: ServiceRuntime, config: WebhooksConfig): Promise<ServiceDeclaration<WebhooksHooks>> {
  const { pool, nc, subjects, log, metrics, outbox, clock } = rt;
  const guard = new TargetGuard(config.WEBHOOK_ALLOW_PRIVATE_TARGETS);
  if (guard.allowPrivate) log.warn('WEBHOOK_ALLOW_PRIVATE_TARGETS=true: webhooks may go to private addresses');
  const sender = new Sender(guard, config.WEBHOOK_TIMEOUT_MS);
  const { box, keeper, sealedReplays } = secretsOf(rt, config);
  const { dispatcher, outcomes } = dispatcherOf(rt, config, {
    sender,
    box,
    onRoom: (endpointId) => retryPoller.refill(endpointId),
  });
  // Every replica forgets what it holds of a changed endpoint (URL, secrets, disabled, deleted).
  const routes = new RouteCache(pool, {
    ttlMs: ROUTE_CACHE_TTL_MS,
    nc,
    subject: subjects.webhookEndpointsChanged(),
    metrics,
  });
  const announce = (tenantId: number, endpointId: number) => {
    dispatcher.invalidate(endpointId); // this replica at once, the others through the broadcast
    routes.cache.announce({ tenant_id: tenantId, endpoint_id: endpointId });
  };
  const { retryPoller, healthSweeper } = webhooksTasks(
    { pool, clock, log, outbox, dispatcher, metrics },
    config,
    announce,
  );
  const identity = new ServiceClient(nc, subjects, { timeoutMs: config.REQUEST_TIMEOUT_MS, log });
  const replays = new ReplayStore(pool, 'webhooks');
  return {
    endpoints: webhooksEndpoints(
      endpointRegistry({
        pool,
        clock,
        guard,
        replays: sealedReplays,
        box,
        maxEndpointsPerTenant: config.WEBHOOK_MAX_ENDPOINTS_PER_TENANT,
        announce,
      }),
      deliveryLog({ pool, clock, replays, dispatcher, leaseMs: config.WEBHOOK_LEASE_MS }),
      async (tenantId, requestId) =>
        void (await identity.call(identityOperations.getTenant, { request_id: requestId, tenant_id: tenantId }, {})),
      webhooksMemberData(pool),
    ),
    tenantData: webhooksTenantTables,
    consumers: webhooksConsumers(rt, { dispatcher, routes, leaseMs: config.WEBHOOK_LEASE_MS }),
    tasks: [keeper, retryPoller, healthSweeper],
    caches: [routes.cache],
    purge: purgeRules(config.WEBHOOK_RETENTION_DAYS),
    hooks: { sweep: () => healthSweeper.sweep(), poll: () => retryPoller.poll(), keepSecrets: () => keeper.runNow() },
    // What is held is handed back and what is in flight finishes (consumers and tasks have stopped).
    close: async () => {
      await dispatcher.stop();
      await outcomes.flushed();
      await sender.close();
    },
  };
}
