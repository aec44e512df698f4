import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService, type ServiceRunner } from '../../../test/support/service-runner.ts';

/**
 * The webhooks service's scrape stays the same size however many tenants have a backlog: the
 * per-tenant gauges name the WEBHOOK_METRICS_TOP_TENANTS tenants with the most pending deliveries
 * and sum up the others as `tenant="other"`. Checked with 1,000 tenants' backlogs in the database.
 */
let hooks: ServiceRunner<'webhooks'>;
const TOP = 5;
const TENANTS = 1_000;

beforeAll(async () => {
  hooks = await startService('webhooks', {
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_METRICS_TOP_TENANTS: String(TOP) },
  });
});
afterAll(async () => {
  await hooks?.stop();
});

async function scrape(): Promise<string[]> {
  const res = await fetch(`http://127.0.0.1:${hooks.service.opsPort}/metrics`);
  expect(res.status).toBe(200);
  return (await res.text()).split('\n').filter((line) => line !== '' && !line.startsWith('#'));
}

const seriesOf = (lines: string[], metric: string) => lines.filter((l) => l.startsWith(`${metric}{`));
const valueOf = (line: string) => Number(line.slice(line.lastIndexOf(' ') + 1));
const tenantOf = (line: string) => /tenant="([^"]+)"/.exec(line)?.[1];

/**
 * Pending deliveries of `TENANTS` tenants (one endpoint each), written as the intake writes them and
 * due tomorrow, so the dispatcher leaves them alone: tenant t has 1 + t % 7 of them, except the
 * three busiest, with 50.
 */
async function backlogOfManyTenants(base: number): Promise<{ total: number; busiest: number[] }> {
  const busiest = [base + 17, base + 400, base + 999];
  const counts = Array.from({ length: TENANTS }, (_, i) => (busiest.includes(base + i) ? 50 : 1 + (i % 7)));
  await hooks.db.query(
    `WITH t AS (SELECT $1::bigint + i AS tenant_id, ($2::int[])[i + 1] AS n FROM generate_series(0, $3 - 1) i),
          e AS (INSERT INTO webhooks.endpoints (tenant_id, url, event_types, secret, created_at, updated_at)
                SELECT tenant_id, 'https://hooks.example.com/' || tenant_id, '{*}', 'not-a-secret', now(), now() FROM t
                RETURNING id, tenant_id),
          ev AS (INSERT INTO webhooks.events (id, tenant_id, type, body, created_at, received_at)
                 SELECT gen_random_uuid(), t.tenant_id, 'points.earned', '{}', now() - make_interval(secs => k), now()
                   FROM t, generate_series(1, t.n) k
                 RETURNING id, tenant_id, created_at)
     INSERT INTO webhooks.deliveries (tenant_id, endpoint_id, event_id, next_attempt_at, expires_at, created_at)
     SELECT ev.tenant_id, e.id, ev.id, now() + interval '1 day', now() + interval '3 days', ev.created_at
       FROM ev JOIN e USING (tenant_id)`,
    [base, counts, TENANTS],
  );
  return { total: counts.reduce((a, b) => a + b, 0), busiest };
}

it('keeps the scrape bounded with 1,000 tenants: the busiest tenants by name, the others as "other"', async () => {
  const before = await scrape();
  const base = 1_000_000 + Math.floor(Math.random() * 1_000_000);
  const { total, busiest } = await backlogOfManyTenants(base);

  const after = await scrape();
  const backlog = seriesOf(after, 'loyalty_webhook_backlog');
  const ages = seriesOf(after, 'loyalty_webhook_oldest_pending_age_seconds');
  expect(backlog).toHaveLength(TOP + 1);
  expect(ages).toHaveLength(TOP + 1);
  // No series per tenant anywhere in the scrape: only those two gauges carry a tenant label (other
  // series may appear between two scrapes as the service warms up, e.g. its first purge pass).
  expect(after.filter((l) => l.includes('tenant="')).length).toBeLessThanOrEqual(2 * (TOP + 1));
  expect(after.length - before.length).toBeLessThan(TENANTS);

  // Nothing is lost in the bound: the series add up to every pending delivery.
  expect(backlog.reduce((sum, l) => sum + valueOf(l), 0)).toBe(total);
  const named = backlog.map(tenantOf);
  expect(named).toContain('other');
  for (const t of busiest) expect(named).toContain(String(t));
  // The next two: 7 pending each, the lowest tenant ids first (i % 7 == 6: base + 6, base + 13).
  expect(named).toEqual(expect.arrayContaining([String(base + 6), String(base + 13)]));
  // `other` carries the oldest age of all the others (seconds, roughly the 7-second-old events).
  const otherAge = valueOf(ages.find((l) => tenantOf(l) === 'other') ?? '');
  expect(otherAge).toBeGreaterThanOrEqual(7);
  expect(otherAge).toBeLessThan(600);
});

it('leaves no stale series when tenants leave the top or have nothing pending any more', async () => {
  await hooks.db.query(`UPDATE webhooks.deliveries SET status = 'failed', failed_at = now(), next_attempt_at = NULL`);
  const lines = await scrape();
  expect(seriesOf(lines, 'loyalty_webhook_backlog')).toHaveLength(0);
  expect(seriesOf(lines, 'loyalty_webhook_oldest_pending_age_seconds')).toHaveLength(0);
});
