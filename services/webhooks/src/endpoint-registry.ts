import { AppError, type WebhookEndpoint } from '@loyalty/contracts';
import { withTransaction, type Clock, type Pool, type PoolClient, type ReplayStore } from '@loyalty/runtime';
import { newSigningSecret } from './domain/signature.ts';
import { failPending } from './store/deliveries.ts';
import {
  countEndpoints,
  type EndpointRow,
  deleteEndpoint,
  findEndpoint,
  insertEndpoint,
  listEndpoints,
  rotateSecret,
  updateEndpoint,
} from './store/endpoints.ts';
import type { SecretBox } from './secret-box.ts';
import type { TargetGuard } from './target-guard.ts';
import { endpointView } from './views.ts';

/** The old secret keeps signing beside the new one this long after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3600_000;

export interface RegistryDeps {
  pool: Pool;
  clock: Clock;
  guard: TargetGuard;
  /** Answers stored under an Idempotency-Key hold the secret: this store seals them. */
  replays: ReplayStore;
  /** Seals the secrets before they are stored. */
  box: SecretBox;
  maxEndpointsPerTenant: number;
  /** Tell every replica an endpoint of a tenant changed (after the commit). */
  announce: (tenantId: number, endpointId: number) => void;
}

/** Who asks, for which tenant, under which Idempotency-Key (operator calls have none). */
export interface Caller {
  tenantId: number;
  idempotencyKey?: string;
}

const notFound = () => new AppError('webhook_endpoint_not_found');

/** The answer of a creation: the endpoint with its secret (shown only here). */
type Created = { endpoint: WebhookEndpoint & { secret: string } };

/**
 * A tenant's webhook endpoints: create (the secret is in that answer only), list, get, change,
 * disable and enable, delete, rotate the secret. Every query is scoped to the caller's tenant, so
 * another tenant's endpoint id answers exactly like a missing one.
 */
export function endpointRegistry(deps: RegistryDeps) {
  const { pool, clock, replays } = deps;
  const checkTarget = (url: string) => checkTargetOf(deps.guard, url);

  return {
    async create(c: Caller, d: { url: string; event_types: string[]; description?: string }) {
      const key = { tenantId: c.tenantId, key: c.idempotencyKey, operation: 'webhooks.endpoints.create', data: d };
      if (key.key) {
        const stored = await replays.find<Created>({ ...key, key: key.key });
        if (stored) return stored;
      }
      // Resolving the name takes a network round trip: before the transaction, never inside it.
      await checkTarget(d.url);
      const created = await replays.run(key, (db) => createWithinLimit(db, deps, c.tenantId, d));
      deps.announce(c.tenantId, created.endpoint.id);
      return created;
    },

    async list(c: Caller) {
      return { endpoints: (await listEndpoints(pool, c.tenantId)).map(endpointView) };
    },

    async get(c: Caller, d: { endpoint_id: number }) {
      const row = await findEndpoint(pool, c.tenantId, d.endpoint_id);
      if (!row) throw notFound();
      return { endpoint: endpointView(row) };
    },

    async update(c: Caller, d: EndpointChange) {
      if (d.url !== undefined) await checkTarget(d.url);
      const row = await withTransaction(pool, (db) => applyUpdate(db, clock.now(), c.tenantId, d));
      deps.announce(c.tenantId, row.id);
      return { endpoint: endpointView(row) };
    },

    async remove(c: Caller, d: { endpoint_id: number }) {
      await withTransaction(pool, async (db) => {
        const now = clock.now();
        if (!(await deleteEndpoint(db, c.tenantId, d.endpoint_id, now))) throw notFound();
        await failPending(db, [d.endpoint_id], now, 'the endpoint was deleted');
      });
      deps.announce(c.tenantId, d.endpoint_id);
      return { endpoint_id: d.endpoint_id, deleted: true as const };
    },

    async rotateSecret(c: Caller, d: { endpoint_id: number }) {
      const key = {
        tenantId: c.tenantId,
        key: c.idempotencyKey,
        operation: 'webhooks.endpoints.rotate_secret',
        data: d,
      };
      const reply = await replays.run(key, (db) => rotateWithin(db, deps, c.tenantId, d.endpoint_id));
      deps.announce(c.tenantId, d.endpoint_id);
      return reply;
    },
  };
}
/** A new secret (answered once, stored sealed); the current one keeps signing for the overlap. */
async function rotateWithin(db: PoolClient, deps: Pick<RegistryDeps, 'clock' | 'box'>, tenantId: number, id: number) {
  const now = deps.clock.now();
  const until = new Date(now.getTime() + ROTATION_OVERLAP_MS);
  const secret = newSigningSecret();
  const row = await rotateSecret(db, tenantId, id, await deps.box.seal(db, tenantId, secret), now, until);
  if (!row) throw notFound();
  return { endpoint: { ...endpointView(row), secret }, previous_secret_expires_at: until.toISOString() };
}

/** The URL must resolve to a public address (unless private targets are allowed). */
async function checkTargetOf(guard: TargetGuard, url: string): Promise<void> {
  const refusal = await guard.refusal(new URL(url));
  if (refusal)
    throw new AppError('webhook_url_refused', `The URL cannot be a webhook target: ${refusal}.`, { reason: refusal });
}

/** Insert a tenant's endpoint unless it has the most it may have. */
async function createWithinLimit(
  db: PoolClient,
  deps: Pick<RegistryDeps, 'clock' | 'maxEndpointsPerTenant' | 'box'>,
  tenantId: number,
  d: { url: string; event_types: string[]; description?: string },
): Promise<Created> {
  // One creation at a time per tenant, so two at once cannot both pass the limit.
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended('webhooks.endpoints', $1))`, [tenantId]);
  if ((await countEndpoints(db, tenantId)) >= deps.maxEndpointsPerTenant)
    throw new AppError('webhook_endpoint_limit', undefined, { max_endpoints: deps.maxEndpointsPerTenant });
  const secret = newSigningSecret();
  const row = await insertEndpoint(db, {
    tenantId,
    url: d.url,
    description: d.description ?? null,
    eventTypes: d.event_types,
    secret: await deps.box.seal(db, tenantId, secret),
    now: deps.clock.now(),
  });
  return { endpoint: { ...endpointView(row), secret } };
}

type EndpointChange = {
  endpoint_id: number;
  url?: string;
  event_types?: string[];
  description?: string | null;
  enabled?: boolean;
};

/** Change what the request names; disabling gives up what was pending. */
async function applyUpdate(db: PoolClient, now: Date, tenantId: number, d: EndpointChange): Promise<EndpointRow> {
  const updated = await updateEndpoint(db, tenantId, d.endpoint_id, {
    url: d.url,
    description: d.description,
    eventTypes: d.event_types,
    enabled: d.enabled,
    now,
  });
  if (!updated) throw notFound();
  // Disabled: nothing more is sent to it; what was pending is given up (redeliver brings it back).
  if (d.enabled === false) await failPending(db, [updated.id], now, 'the endpoint was disabled');
  return updated;
}

export type EndpointRegistry = ReturnType<typeof endpointRegistry>;
