import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { WebhookReceiver } from '../../../test/support/webhook-receiver.ts';
import { earn, endpoint, eventually, merchant } from './support.ts';

/**
 * The SSRF rule with private targets not allowed (as in production): refused at creation and
 * change, and again at delivery, where the address connected to is the one checked.
 */
let sys: TestSystem;
const receiver = new WebhookReceiver();

beforeAll(async () => {
  sys = await startTestSystem({
    services: ['identity', 'ledger', 'webhooks'],
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false', WEBHOOK_POLL_INTERVAL_MS: '100' },
  });
  await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
  await sys?.stop();
});

describe('SSRF', () => {
  it.each([
    ['loopback by name', () => `http://localhost:${receiver.port}/hook`],
    ['loopback', () => `http://127.0.0.1:${receiver.port}/hook`],
    ['loopback in hex (normalised by the URL parser)', () => 'http://0x7f.0.0.1/hook'],
    ['loopback as one decimal number', () => 'http://2130706433/hook'],
    ['IPv6 loopback', () => 'http://[::1]/hook'],
    ['IPv4-mapped IPv6 loopback', () => 'http://[::ffff:127.0.0.1]/hook'],
    ['IPv4-compatible IPv6 loopback', () => 'http://[::127.0.0.1]/hook'],
    ['private', () => 'https://10.0.0.8/hook'],
    ['private 192.168', () => 'https://192.168.10.1/hook'],
    ['link-local (cloud metadata)', () => 'http://169.254.169.254/latest/meta-data/'],
    ['unique-local IPv6', () => 'https://[fd00::1]/hook'],
    ['link-local IPv6', () => 'https://[fe80::1]/hook'],
    ['multicast', () => 'http://224.0.0.1/hook'],
    ['unspecified', () => 'http://0.0.0.0/hook'],
    ['a name that does not resolve', () => 'https://no-such-host.invalid/hook'],
  ])('refuses an endpoint on %s (422 webhook_url_refused)', async (_what, url) => {
    const m = await merchant(sys);
    const r = await m.api('POST', '/api/v1/webhooks/endpoints', {
      body: { url: url(), event_types: ['*'] },
      headers: { 'idempotency-key': randomUUID() },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.error).toMatchObject({ code: 'webhook_url_refused', reason: expect.any(String) });
    expect((await m.api('GET', '/api/v1/webhooks/endpoints')).body.data!.endpoints).toEqual([]);
  });

  it('accepts a public address, and refuses changing it to a private one', async () => {
    const m = await merchant(sys);
    const ep = await endpoint(m.api, 'https://93.184.216.34/hook');
    const r = await m.api('PATCH', `/api/v1/webhooks/endpoints/${ep.id}`, { body: { url: 'http://127.0.0.1/hook' } });
    expect(r.status).toBe(422);
    expect(r.body.error!.code).toBe('webhook_url_refused');
    expect((await m.api('GET', `/api/v1/webhooks/endpoints/${ep.id}`)).body.data!.endpoint).toMatchObject({
      url: 'https://93.184.216.34/hook',
    });
    // The operator API applies the same rule.
    const res = await fetch(`${sys.url}/admin/v1/tenants/${m.tenantId}/webhooks/endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sys.env.OPERATOR_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'http://[::1]:9/hook', event_types: ['*'] }),
    });
    expect(res.status).toBe(422);
  });

  it('checks again at delivery: a name that now resolves to a private address gets nothing', async () => {
    const m = await merchant(sys);
    // Endpoints whose names resolved to public addresses when they were made, and to loopback now
    // (DNS rebinding): the rows are written as creation would have written them.
    const ids: number[] = [];
    for (const url of [`http://localhost:${receiver.port}/rebound`, `http://127.0.0.1:${receiver.port}/literal`]) {
      const { rows } = await sys.db.query<{ id: number }>(
        `INSERT INTO webhooks.endpoints (tenant_id, url, event_types, secret, created_at, updated_at)
         VALUES ($1, $2, '{points.earned}', 'whsec_test', $3, $3) RETURNING id`,
        [m.tenantId, url, new Date(sys.clock.now().getTime() - 1_000)],
      );
      ids.push(rows[0]!.id);
    }
    await earn(m.api, m.pointsCard);
    for (const id of ids) {
      const [d] = await eventually(
        async () =>
          (await m.api('GET', `/api/v1/webhooks/endpoints/${id}/deliveries`)).body.data!.deliveries as {
            attempts: { http_status: number | null; error: string }[];
          }[],
        (x) => (x[0]?.attempts.length ?? 0) > 0,
      );
      expect(d!.attempts[0]!.http_status).toBeNull();
      expect(d!.attempts[0]!.error).toMatch(/127\.0\.0\.1|::1/);
      expect(d!.attempts[0]!.error).toMatch(/not a public address \(loopback\)/);
    }
    expect(receiver.received).toHaveLength(0);
  });
});
