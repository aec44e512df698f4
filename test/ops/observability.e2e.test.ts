import { createInbox } from 'nats';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readGatewayConfig, startGateway } from '@loyalty/gateway';
import { apiClient, startTestSystem, type TestSystem } from '../support/system.ts';
import { connectAs } from '../support/nats.ts';

/** Every service is observable: health, readiness, Prometheus metrics, and NATS micro discovery. */
let sys: TestSystem;
beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger', 'claims', 'referrals', 'webhooks'] });
});
afterAll(async () => sys?.stop());

const ops = (port: number, path: string) => fetch(`http://127.0.0.1:${port}${path}`);

it('answers /healthz, /readyz and /metrics on every ops port', async () => {
  const ports = {
    gateway: sys.gateway.opsPort,
    ...Object.fromEntries(Object.entries(sys.services).map(([n, s]) => [n, s!.opsPort])),
  };
  expect(Object.keys(ports).sort()).toEqual(['claims', 'gateway', 'identity', 'ledger', 'referrals', 'webhooks']);
  for (const [name, port] of Object.entries(ports)) {
    expect((await ops(port, '/healthz')).status, name).toBe(200);
    const ready = await ops(port, '/readyz');
    expect(ready.status, name).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready' });
    const metrics = await (await ops(port, '/metrics')).text();
    expect(metrics, name).toContain(`service="${name}"`);
    expect(metrics, name).toContain('process_resident_memory_bytes');
  }
});

it('serves /metrics on the ops port only: the public port answers 404 unless PUBLIC_METRICS=true', async () => {
  const hidden = await fetch(`${sys.url}/metrics`);
  expect(hidden.status).toBe(404);
  expect(await hidden.json()).toMatchObject({ success: false, error: { code: 'route_not_found' } });
  expect((await fetch(`${sys.url}/healthz`)).status).toBe(200);
  const open = await startGateway(readGatewayConfig({ ...sys.envFor('gateway'), PUBLIC_METRICS: 'true' }));
  try {
    const metrics = await fetch(`${open.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('service="gateway"');
  } finally {
    await open.stop();
  }
});

it('counts HTTP routes, NATS operations, error codes, outbox backlog and consumer lag', async () => {
  const t = await sys.tenant();
  const api = apiClient(sys.url, t);
  await api('POST', '/api/v1/auth/member/check', { body: { email: 'metrics@example.com' } });
  await api('POST', '/api/v1/auth/member/request-otp', { body: { email: 'nobody@example.com' } }); // 404 member_not_found
  const gateway = await (await ops(sys.gateway.opsPort, '/metrics')).text();
  expect(gateway).toMatch(
    /loyalty_http_request_duration_seconds_count\{[^}]*route="\/api\/v1\/auth\/member\/check"[^}]*\} [1-9]/,
  );
  expect(gateway).toMatch(/loyalty_http_errors_total\{[^}]*code="member_not_found"[^}]*\} 1/);
  expect(gateway).toMatch(
    /loyalty_nats_client_request_duration_seconds_count\{[^}]*to="identity",operation="member.check",outcome="ok"[^}]*\} [1-9]/,
  );
  expect(gateway).toMatch(
    /loyalty_nats_client_request_duration_seconds_count\{[^}]*operation="member.request_otp",outcome="error"[^}]*\} 1/,
  );
  const identity = await (await ops(sys.services.identity!.opsPort, '/metrics')).text();
  expect(identity).toMatch(/loyalty_nats_request_duration_seconds_count\{[^}]*operation="member.check"[^}]*\} [1-9]/);
  expect(identity).toMatch(
    /loyalty_nats_request_errors_total\{[^}]*operation="member.request_otp",code="member_not_found"/,
  );
  expect(identity).toMatch(/loyalty_consumer_pending\{[^}]*consumer="identity-mail-ledger-points_earned"[^}]*\} \d+/);
  const ledger = await (await ops(sys.services.ledger!.opsPort, '/metrics')).text();
  expect(ledger).toMatch(/loyalty_outbox_backlog\{[^}]*\} \d+/);
  expect(ledger).toMatch(/loyalty_outbox_oldest_age_seconds\{[^}]*\} [\d.]+/);
  const webhooks = await (await ops(sys.services.webhooks!.opsPort, '/metrics')).text();
  expect(webhooks).toMatch(/loyalty_consumer_pending\{[^}]*consumer="webhooks-intake"[^}]*\} \d+/);
  expect(webhooks).toContain('# TYPE loyalty_webhook_attempts_total counter');
  expect(webhooks).toContain('# TYPE loyalty_webhook_backlog gauge');
});

it('registers every service with the NATS services protocol ($SRV discovery and stats)', async () => {
  const nc = await connectAs('admin', { url: sys.env.NATS_URL });
  try {
    const found = new Set<string>();
    const sub = nc.subscribe(createInbox(), {
      callback: (_e, m) => {
        const info = m.json<{ name: string }>();
        found.add(info.name);
      },
    });
    nc.publish('$SRV.PING', undefined, { reply: sub.getSubject() });
    await new Promise((r) => setTimeout(r, 500));
    sub.unsubscribe();
    const root = sys.env.SUBJECT_ROOT;
    for (const name of ['identity', 'ledger', 'claims', 'referrals', 'webhooks'])
      expect(found).toContain(`${root}-${name}`);
    const stats = await nc.request(`$SRV.STATS.${root}-identity`, undefined, { timeout: 2_000 });
    expect(stats.json<{ endpoints: { name: string }[] }>().endpoints.map((e) => e.name)).toContain('member_check');
  } finally {
    await nc.close();
  }
});
