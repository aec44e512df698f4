// Every metric the alert rules and the dashboards query exists on a running stack's ops ports,
// with the labels and label values their selectors name: the system runs, takes earns, a
// redemption and a webhook delivery, and every process's /metrics is read.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { errorCatalogue } from '@loyalty/contracts';
import { dashboardJson, dashboardSpecs } from '../../scripts/observability/dashboards.ts';
import { metricNames, parseExposition, selectors } from '../../scripts/observability/promql.ts';
import { externalMetrics, ruleGroups } from '../../scripts/observability/rules.ts';
import { kustomize } from '../deploy/kustomize.ts';
import { apiClient, startTestSystem, type TestSystem } from '../support/system.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

let sys: TestSystem;
const receiver = new WebhookReceiver();
beforeAll(async () => {
  sys = await startTestSystem({
    services: ['identity', 'ledger', 'claims', 'referrals', 'webhooks'],
    env: { WEBHOOK_POLL_INTERVAL_MS: '100' },
  });
  await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
  await sys?.stop();
});

/** Labels Prometheus adds when it scrapes a target (not the process's own). */
const targetLabels = new Set(['namespace', 'pod', 'instance', 'job', 'container', 'endpoint']);

/** Every PromQL expression of the rules, the dashboards (panels and variables) and the autoscalers. */
function expressions(): { where: string; expr: string }[] {
  const out: { where: string; expr: string }[] = [];
  for (const g of ruleGroups)
    for (const r of g.rules) out.push({ where: `rule ${'alert' in r ? r.alert : r.record}`, expr: r.expr });
  for (const spec of dashboardSpecs) {
    const d = dashboardJson(spec) as {
      panels: { title: string; targets?: { expr: string }[] }[];
      templating: { list: { name: string; definition?: string }[] };
    };
    for (const p of d.panels)
      for (const t of p.targets ?? []) out.push({ where: `${spec.uid}: ${p.title}`, expr: t.expr });
    for (const v of d.templating.list)
      if (v.definition) {
        const m = /^label_values\((.*),\s*[A-Za-z_]+\)$/.exec(v.definition);
        out.push({ where: `${spec.uid}: variable ${v.name}`, expr: m ? m[1]! : v.definition });
      }
  }
  const overlay = kustomize(path.join(import.meta.dirname, '..', '..', 'deploy', 'k8s', 'overlays', 'production'));
  for (const m of overlay.filter((m) => m.kind === 'ScaledObject'))
    for (const t of (m.spec as { triggers: { type: string; metadata: { query?: string } }[] }).triggers)
      if (t.type === 'prometheus') out.push({ where: `ScaledObject ${m.metadata.name}`, expr: t.metadata.query! });
  return out;
}

async function scrapeAll(): Promise<ReturnType<typeof parseExposition>> {
  const ports = [sys.gateway.opsPort, ...Object.values(sys.services).map((s) => s!.opsPort)];
  const texts = await Promise.all(ports.map(async (p) => (await fetch(`http://127.0.0.1:${p}/metrics`)).text()));
  return texts.flatMap(parseExposition);
}

it('exposes every metric, label and label value the rules and dashboards use', async () => {
  // Traffic: a points and a cashback earn, balance reads, a webhook delivered and one pending, a
  // failure reply.
  const t = await sys.tenant({
    scopes: ['points_read', 'points_write', 'cashback_read', 'cashback_write', 'card_read', 'webhooks_manage'],
  });
  const api = apiClient(sys.url, t);
  const card = async (body: Record<string, unknown>) =>
    (await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${t.tenantId}/cards`, body)).card.id;
  const points = await card({ name: 'Points', reward_system: 'points', points_ratio: 1 });
  const cashback = await card({
    name: 'Cashback',
    reward_system: 'cashback',
    currency: 'EUR',
    cashback_config: { cashback_percentage: 10 },
  });
  const hook = await api('POST', '/api/v1/webhooks/endpoints', {
    body: { url: receiver.url('/metrics-check'), event_types: ['points.earned'] },
    headers: { 'idempotency-key': randomUUID() },
  });
  expect(hook.status, JSON.stringify(hook.body)).toBe(200);
  // A second endpoint that never answers: its delivery stays pending (the backlog gauges).
  receiver.respond((r) => (r.path === '/hang' ? { hang: true } : { status: 200 }));
  const hanging = await api('POST', '/api/v1/webhooks/endpoints', {
    body: { url: receiver.url('/hang'), event_types: ['points.earned'] },
    headers: { 'idempotency-key': randomUUID() },
  });
  expect(hanging.status, JSON.stringify(hanging.body)).toBe(200);
  const email = `observed.${Date.now()}@example.com`;
  const earned = await api('POST', '/api/v1/loyalty/points/earn', {
    body: { card_id: points, email, member_name: 'Observed', purchase_amount: 50, reference: `o-${randomUUID()}` },
  });
  expect(earned.status, JSON.stringify(earned.body)).toBe(200);
  const cashbackEarn = await api('POST', '/api/v1/cashback/cashback/earn', {
    body: { card_id: cashback, email, member_name: 'Observed', purchase_amount: 20, reference: `c-${randomUUID()}` },
  });
  expect(cashbackEarn.status, JSON.stringify(cashbackEarn.body)).toBe(200);
  for (let i = 0; i < 3; i++) await api('GET', `/api/v1/loyalty/points/balance?card_id=${points}&email=${email}`);
  await receiver.waitFor((r) => r.path === '/metrics-check');
  await receiver.waitFor((r) => r.path === '/hang');
  // Failure replies (member_not_found in identity, an unknown card in the ledger): the error counters.
  await api('POST', '/api/v1/auth/member/request-otp', { body: { email: 'nobody@example.com' } });
  const refused = await api('POST', '/api/v1/loyalty/points/earn', {
    body: { card_id: 2 ** 31 - 1, email, member_name: 'Observed', purchase_amount: 5, reference: `x-${randomUUID()}` },
  });
  expect(refused.status).toBe(404);

  // The delivery is counted once its outcome is recorded: read until it shows.
  let samples = await scrapeAll();
  for (let i = 0; i < 50 && !samples.some((s) => s.name === 'loyalty_webhook_event_to_delivery_seconds_count'); i++) {
    await new Promise((r) => setTimeout(r, 100));
    samples = await scrapeAll();
  }

  const recorded = new Set(ruleGroups.flatMap((g) => g.rules.flatMap((r) => ('record' in r ? [r.record] : []))));
  const names = new Set(samples.map((s) => s.name));
  const codes = new Set(Object.keys(errorCatalogue));
  const problems: string[] = [];
  const exprs = expressions();
  expect(exprs.length).toBeGreaterThan(60);
  let checked = 0;
  for (const { where, expr } of exprs) {
    for (const name of metricNames(expr)) {
      if (name in externalMetrics) continue;
      if (recorded.has(name)) continue;
      checked += 1;
      if (!names.has(name)) problems.push(`${where}: no process exposes ${name}`);
    }
    for (const { metric, equals } of selectors(expr)) {
      if (metric in externalMetrics || recorded.has(metric)) continue;
      const series = samples.filter((s) => s.name === metric);
      for (const label of targetLabels) delete equals[label];
      for (const [label, value] of Object.entries(equals)) {
        if (!series.some((s) => label in s.labels)) problems.push(`${where}: ${metric} has no label ${label}`);
        // An error code shows only once that error happened: it must be one of the catalogue.
        else if (label === 'code') {
          if (!codes.has(value)) problems.push(`${where}: ${value} is not an error code of the catalogue`);
        } else if (!series.some((s) => Object.entries(equals).every(([l, v]) => s.labels[l] === v)))
          problems.push(`${where}: no series ${metric}{${Object.entries(equals).map(([l, v]) => `${l}="${v}"`)}}`);
      }
    }
  }
  expect(problems).toEqual([]);
  expect(checked).toBeGreaterThan(50);
});

it('the check finds a metric that does not exist (control)', async () => {
  const samples = await scrapeAll();
  const names = new Set(samples.map((s) => s.name));
  expect(metricNames('sum(rate(loyalty_earns_totl[5m]))').filter((n) => !names.has(n))).toEqual(['loyalty_earns_totl']);
});
