import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookOperations } from '@loyalty/contracts';
import { verifyWebhookSignature } from '@loyalty/sdk';
import { connectAs } from '../../../test/support/nats.ts';
import { newTenantId, publicMeta, startService, type ServiceRunner } from '../../../test/support/service-runner.ts';
import { WebhookReceiver } from '../../../test/support/webhook-receiver.ts';
import { masterKey } from '../src/domain/envelope.ts';
import { pointsEarned, publishEvents } from './events.ts';

/**
 * Webhook signing secrets at rest (envelope encryption): stored sealed under the tenant's data key,
 * the data key wrapped by SECRETS_KEY; stored answers that carry a secret sealed too; rows from
 * before sealed at start; SECRETS_KEY rotated with SECRETS_KEY_PREVIOUS while the data keys are
 * rewrapped; signing unchanged throughout; no secret and no key in the logs.
 */
let hooks: ServiceRunner<'webhooks'>;
let nc: NatsConnection;
const receivers: WebhookReceiver[] = [];
const logged: string[] = [];
const firstKey = randomBytes(32).toString('base64');

beforeAll(async () => {
  hooks = await startService('webhooks', {
    env: {
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_POLL_INTERVAL_MS: '100',
      SECRETS_KEY: firstKey,
      LOG_LEVEL: 'trace',
    },
    logTo: new Writable({
      write(chunk: Buffer, _encoding, done) {
        logged.push(chunk.toString('utf8'));
        done();
      },
    }),
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

async function create(tenantId: number, url: string, idempotencyKey?: string) {
  const { endpoint } = await hooks.request(
    webhookOperations['webhooks.endpoints.create'],
    publicMeta(tenantId, idempotencyKey ? { idempotency_key: idempotencyKey } : {}),
    { url, event_types: ['*'] },
  );
  return endpoint;
}

async function stored(id: number) {
  const { rows } = await hooks.db.query<{ secret: string; previous_secret: string | null }>(
    `SELECT secret, previous_secret FROM webhooks.endpoints WHERE id = $1`,
    [id],
  );
  return rows[0]!;
}

async function keyIds(): Promise<string[]> {
  const { rows } = await hooks.db.query<{ key_id: string }>(`SELECT DISTINCT key_id FROM webhooks.tenant_keys`);
  return rows.map((r) => r.key_id).sort();
}

/** An event to the tenant: the delivery's signature verifies with `secret`. */
async function signsWith(tenantId: number, r: WebhookReceiver, secret: string): Promise<void> {
  const event = pointsEarned(tenantId, hooks.clock.now());
  await publishEvents(nc, hooks.subjects, [event]);
  const [hook] = await r.waitFor((h) => h.event.id === event.id);
  const verified = await verifyWebhookSignature({
    payload: hook!.body,
    header: hook!.headers['loyalty-signature'] as string,
    secret,
    now: hooks.clock.now().getTime(),
  });
  expect(verified.id).toBe(event.id);
}

/** Restart the service with other keys (the runner starts it again with its env object). */
async function restartWith(keys: { current: string; previous?: string }): Promise<void> {
  hooks.env.SECRETS_KEY = keys.current;
  if (keys.previous) hooks.env.SECRETS_KEY_PREVIOUS = keys.previous;
  else delete hooks.env.SECRETS_KEY_PREVIOUS;
  await hooks.restart();
}

describe('webhook secrets at rest', () => {
  it('stores a new secret sealed under a per-tenant data key, and still signs with it', async () => {
    const tenant = newTenantId();
    const r = await receiver();
    const ep = await create(tenant, r.url());
    const row = await stored(ep.id);
    expect(ep.secret).toMatch(/^whsec_/);
    expect(row.secret).toMatch(/^s1\./);
    expect(row.secret).not.toContain(ep.secret);
    expect(row.secret).not.toContain(ep.secret.slice(6));
    const { rows } = await hooks.db.query<{ key_id: string; wrapped_key: string }>(
      `SELECT key_id, wrapped_key FROM webhooks.tenant_keys WHERE tenant_id = $1`,
      [tenant],
    );
    expect(rows).toEqual([
      { key_id: masterKey(Buffer.from(firstKey, 'base64')).id, wrapped_key: expect.stringMatching(/^k1\./) },
    ]);
    await signsWith(tenant, r, ep.secret);
    // The same tenant's next endpoint shares the data key; another tenant gets its own.
    await create(tenant, r.url('/second'));
    await create(newTenantId(), r.url('/other'));
    const { rows: counted } = await hooks.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM webhooks.tenant_keys WHERE tenant_id = $1`,
      [tenant],
    );
    expect(counted[0]!.n).toBe(1);
  });

  it('seals the stored answer of a creation or rotation under an Idempotency-Key, and replays it whole', async () => {
    const tenant = newTenantId();
    const r = await receiver();
    const key = randomUUID();
    const ep = await create(tenant, r.url(), key);
    const again = await create(tenant, r.url(), key);
    expect(again.secret).toBe(ep.secret);
    const rotateKey = randomUUID();
    const rotated = await hooks.request(
      webhookOperations['webhooks.endpoints.rotate_secret'],
      publicMeta(tenant, { idempotency_key: rotateKey }),
      { endpoint_id: ep.id },
    );
    const replayed = await hooks.request(
      webhookOperations['webhooks.endpoints.rotate_secret'],
      publicMeta(tenant, { idempotency_key: rotateKey }),
      { endpoint_id: ep.id },
    );
    expect(replayed.endpoint.secret).toBe(rotated.endpoint.secret);
    const { rows } = await hooks.db.query<{ response: string }>(
      `SELECT response FROM webhooks.idempotency_keys WHERE tenant_id = $1`,
      [tenant],
    );
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.response).toMatch(/^s1\./);
      expect(row.response).not.toContain('whsec_');
    }
    // Both secrets sign during the rotation's overlap: the old one moved to previous_secret, sealed.
    const row = await stored(ep.id);
    expect(row.previous_secret).toMatch(/^s1\./);
    const hook = pointsEarned(tenant, hooks.clock.now());
    await publishEvents(nc, hooks.subjects, [hook]);
    const [got] = await r.waitFor((h) => h.event.id === hook.id);
    for (const secret of [ep.secret, rotated.endpoint.secret])
      await verifyWebhookSignature({
        payload: got!.body,
        header: got!.headers['loyalty-signature'] as string,
        secret,
        now: hooks.clock.now().getTime(),
      });
  });

  it('seals secrets and stored answers kept in plaintext from before, and signs with them', async () => {
    const tenant = newTenantId();
    const r = await receiver();
    const secret = `whsec_${randomBytes(32).toString('base64url')}`;
    const { rows } = await hooks.db.query<{ id: number }>(
      `INSERT INTO webhooks.endpoints (tenant_id, url, event_types, secret, previous_secret, previous_secret_expires_at, created_at, updated_at)
       VALUES ($1, $2, '{*}', $3, $4, now() + interval '1 day', now(), now()) RETURNING id`,
      [tenant, r.url(), secret, 'whsec_old-plaintext'],
    );
    const plaintextAnswer = JSON.stringify({ endpoint: { id: rows[0]!.id, secret } });
    await hooks.db.query(
      `INSERT INTO webhooks.idempotency_keys (tenant_id, key, request_hash, response) VALUES ($1, 'old-create', 'x', $2)`,
      [tenant, plaintextAnswer],
    );
    // Before the keeper's pass the plaintext row signs as it is; then everything is sealed.
    await signsWith(tenant, r, secret);
    expect(await hooks.service.hooks.keepSecrets()).toBeGreaterThanOrEqual(2);
    const row = await stored(rows[0]!.id);
    expect(row.secret).toMatch(/^s1\./);
    expect(row.previous_secret).toMatch(/^s1\./);
    const { rows: answers } = await hooks.db.query<{ response: string }>(
      `SELECT response FROM webhooks.idempotency_keys WHERE tenant_id = $1 AND key = 'old-create'`,
      [tenant],
    );
    expect(answers[0]!.response).toMatch(/^s1\./);
    const { rows: left } = await hooks.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM webhooks.endpoints WHERE secret NOT LIKE 's1.%' OR previous_secret NOT LIKE 's1.%'`,
    );
    expect(left[0]!.n).toBe(0);
    // The dispatcher reads the endpoint again after a change; a restart makes sure it reads the sealed row.
    await hooks.restart();
    await signsWith(tenant, r, secret);
  });

  it('rotates SECRETS_KEY: the previous key is read while data keys are rewrapped, then no longer needed', async () => {
    const tenant = newTenantId();
    const r = await receiver();
    const ep = await create(tenant, r.url());
    const secretColumnBefore = (await stored(ep.id)).secret;
    const secondKey = randomBytes(32).toString('base64');
    const [first, second] = [firstKey, secondKey].map((k) => masterKey(Buffer.from(k, 'base64')).id);

    // A new key alone cannot open what the old one wrapped: the service says so and signs nothing.
    await restartWith({ current: secondKey });
    const event = pointsEarned(tenant, hooks.clock.now());
    await publishEvents(nc, hooks.subjects, [event]);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(r.received.some((h) => h.event.id === event.id)).toBe(false);
    expect(logged.join('')).toContain('neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS');

    // With the old one as SECRETS_KEY_PREVIOUS: signing works at once, the held delivery goes out.
    await restartWith({ current: secondKey, previous: firstKey });
    await r.waitFor((h) => h.event.id === event.id, 1, 20_000);
    await hooks.service.hooks.keepSecrets();
    expect(await keyIds()).toEqual([second]);
    expect(await keyIds()).not.toContain(first);
    // The secrets themselves were not touched: only the small per-tenant key rows were.
    expect((await stored(ep.id)).secret).toBe(secretColumnBefore);
    const metrics = await (await fetch(`http://127.0.0.1:${hooks.service.opsPort}/metrics`)).text();
    expect(metrics).toMatch(/loyalty_webhook_secrets_pending\{service="webhooks"\} 0/);

    // The previous key removed: everything still opens and signs.
    await restartWith({ current: secondKey });
    await signsWith(tenant, r, ep.secret);
  });

  it('never writes a secret or a key to the log', async () => {
    const text = logged.join('');
    expect(text.length).toBeGreaterThan(1_000); // trace level: the service logged plenty
    const { rows } = await hooks.db.query<{ response: string }>(`SELECT response FROM webhooks.idempotency_keys`);
    expect(text).not.toMatch(/whsec_[A-Za-z0-9_-]{20}/);
    expect(text).not.toContain(firstKey);
    expect(text).not.toContain(hooks.env.SECRETS_KEY);
    expect(rows.length).toBeGreaterThan(0);
  });
});
