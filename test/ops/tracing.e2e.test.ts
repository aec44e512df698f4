import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterEnv } from '../support/cluster-env.ts';
import { Cluster } from '../support/cluster.ts';
import { MailSink } from '../support/mail-sink.ts';
import { createTestDatabase, OPERATOR_TOKEN } from '../support/system.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * Tracing end to end: the system as separate processes with OTEL_EXPORTER_OTLP_ENDPOINT pointing at
 * an OTLP/HTTP receiver of this test's own. One earn that triggers a webhook delivery must give one
 * trace holding the gateway's request, its NATS request, the ledger's handler, its SQL, the outbox
 * relay's publish, the webhooks service's consumer and the delivery attempt, with each span's
 * parent where it belongs and the consumer and delivery linked to the publishing span.
 */

interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  links: { traceId: string; spanId: string }[];
  attributes: Record<string, unknown>;
}

/** OTLP/JSON ids are hex (the JS exporter's JSON); base64 is accepted too, as the protocol allows. */
function hexId(id: unknown): string {
  if (typeof id !== 'string' || id === '') return '';
  return /^[0-9a-f]+$/i.test(id) && (id.length === 32 || id.length === 16)
    ? id.toLowerCase()
    : Buffer.from(id, 'base64').toString('hex');
}

class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url === '/v1/traces' && req.method === 'POST') this.take(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private take(body: string): void {
    const doc = JSON.parse(body) as {
      resourceSpans?: {
        resource?: { attributes?: { key: string; value: { stringValue?: string } }[] };
        scopeSpans?: {
          spans?: {
            traceId: string;
            spanId: string;
            parentSpanId?: string;
            name: string;
            kind: number;
            links?: { traceId: string; spanId: string }[];
            attributes?: { key: string; value: Record<string, unknown> }[];
          }[];
        }[];
      }[];
    };
    for (const rs of doc.resourceSpans ?? []) {
      const service = rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
      for (const ss of rs.scopeSpans ?? [])
        for (const s of ss.spans ?? [])
          this.spans.push({
            service,
            traceId: hexId(s.traceId),
            spanId: hexId(s.spanId),
            parentSpanId: hexId(s.parentSpanId),
            name: s.name,
            kind: s.kind,
            links: (s.links ?? []).map((l) => ({ traceId: hexId(l.traceId), spanId: hexId(l.spanId) })),
            attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]])),
          });
    }
  }

  async stop(): Promise<void> {
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

describe('tracing across every hop', () => {
  const otlp = new OtlpReceiver();
  const receiver = new WebhookReceiver();
  const sink = new MailSink();
  let gw = '';
  let creds: Record<string, string> = {};

  beforeAll(async () => {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    const endpoint = await otlp.start();
    cleanups.push(() => otlp.stop());
    await receiver.start();
    cleanups.push(() => receiver.stop());
    const smtp = await sink.start();
    cleanups.push(() => sink.stop());
    const { env, root } = clusterEnv(db.url, 'trace', {
      SMTP_URL: smtp,
      SANDBOX_SMTP_URL: smtp,
      EARN_MAIL_WINDOW_SECONDS: '0',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_TRACES_SAMPLER_ARG: '1',
    });
    const cluster = new Cluster(env, `${process.cwd()}/var/cluster-logs/tracing-${root}`);
    cleanups.push(() => cluster.stop());
    await cluster.add('identity');
    await cluster.add('ledger');
    await cluster.add('webhooks');
    await cluster.add('gateway');
    gw = cluster.of('gateway')[0]!.url;
    // Compiled processes started one by one: on a loaded 2-core machine this outlasts the default hook timeout.
  }, 180_000);

  const call = async <T>(method: string, path: string, headers: Record<string, string>, body?: unknown) => {
    const res = await fetch(`${gw}${path}`, {
      method,
      headers: { ...headers, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const out = (await res.json()) as { success: boolean; data: T };
    if (!out.success) throw new Error(`${method} ${path}: ${JSON.stringify(out)}`);
    return { data: out.data, traceparent: res.headers.get('traceparent') };
  };

  it('puts the earn, its SQL, the outbox, the consumer and the webhook delivery in one trace', async () => {
    const operator = { authorization: `Bearer ${OPERATOR_TOKEN}` };
    const { data: t } = await call<{ tenant: { id: number } }>('POST', '/admin/v1/tenants', operator, {
      name: 'traced',
      sandbox: true,
    });
    const { data: a } = await call<{ app: { app_id: string; api_key: string } }>(
      'POST',
      `/admin/v1/tenants/${t.tenant.id}/apps`,
      operator,
      { name: 'traced', scopes: ['points_write', 'webhooks_manage'] },
    );
    const { data: c } = await call<{ card: { id: number } }>(
      'POST',
      `/admin/v1/tenants/${t.tenant.id}/cards`,
      operator,
      {
        name: 'Points',
        reward_system: 'points',
        points_ratio: 1,
      },
    );
    creds = { 'x-app-id': a.app.app_id, 'x-api-key': a.app.api_key };
    await call(
      'POST',
      '/api/v1/webhooks/endpoints',
      { ...creds, 'idempotency-key': randomUUID() },
      {
        url: receiver.url('/traced'),
        event_types: ['points.earned'],
      },
    );

    // A caller's own trace is continued: the gateway's span is a child of the caller's span.
    const callerTrace = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const earn = await call<{ transaction_id: number }>(
      'POST',
      '/api/v1/loyalty/points/earn',
      { ...creds, 'idempotency-key': randomUUID(), traceparent: `00-${callerTrace}-${callerSpan}-01` },
      { card_id: c.card.id, email: 'traced@example.com', purchase_amount: 12, reference: 'traced-1' },
    );
    expect(earn.traceparent).toMatch(new RegExp(`^00-${callerTrace}-[0-9a-f]{16}-01$`));

    // The delivery arrives, then every process has exported its spans of the trace.
    const deadline = Date.now() + 60_000;
    while (!receiver.received.some((r) => r.event.data.transaction_id === earn.data.transaction_id)) {
      if (Date.now() > deadline) throw new Error('the webhook never arrived');
      await new Promise((r) => setTimeout(r, 200));
    }
    const inTrace = () => otlp.spans.filter((s) => s.traceId === callerTrace);
    const find = (service: string, pattern: RegExp, parent?: ReceivedSpan) =>
      inTrace().find(
        (s) =>
          s.service === `loyalty-${service}` &&
          pattern.test(s.name) &&
          (parent === undefined || s.parentSpanId === parent.spanId),
      );
    const must = (s: ReceivedSpan | undefined, what: string): ReceivedSpan => {
      if (s) return s;
      throw new Error(
        `no ${what} span; have: ${inTrace()
          .map((x) => `${x.service} ${x.name}`)
          .join(' | ')}`,
      );
    };
    const wanted = () => {
      const publish = find('ledger', /^outbox publish .*points_earned/);
      return {
        http: find('gateway', /^POST \/api\/v1\/loyalty\/points\/earn$/),
        request: find('gateway', /^nats request .*\.ledger\.points\.earn$/),
        claim: find('gateway', /^redis SET$/),
        handler: find('ledger', /^handle points\.earn$/),
        sql: find('ledger', /^pg /),
        publish,
        consume: publish && find('webhooks', /^consume /, publish),
        delivery: publish && find('webhooks', /^webhook delivery points\.earned$/, publish),
        mailer: publish && find('identity', /^consume /, publish),
      };
    };
    while (Object.values(wanted()).some((s) => s === undefined) && Date.now() < deadline + 15_000)
      await new Promise((r) => setTimeout(r, 250));
    const w = wanted();
    const http = must(w.http, 'gateway request');
    const request = must(w.request, 'NATS request');
    const claim = must(w.claim, 'Idempotency-Key claim');
    const handler = must(w.handler, 'ledger handler');
    const sql = must(w.sql, 'SQL');
    const publish = must(w.publish, 'outbox publish');
    const consume = must(w.consume, 'webhooks consumer');
    const delivery = must(w.delivery, 'webhook delivery');
    const byId = new Map(inTrace().map((s) => [s.spanId, s]));
    const ancestors = (s: ReceivedSpan): string[] => {
      const out: string[] = [];
      for (let p = byId.get(s.parentSpanId); p; p = byId.get(p.parentSpanId)) out.push(p.spanId);
      return out;
    };

    expect(http.parentSpanId).toBe(callerSpan);
    expect(http.kind).toBe(2); // SERVER
    expect(earn.traceparent).toBe(`00-${callerTrace}-${http.spanId}-01`);
    expect(request.parentSpanId).toBe(http.spanId);
    expect(request.kind).toBe(3); // CLIENT
    // The gateway hands its request's span to each call by hand (it keeps no async context).
    expect(claim.parentSpanId).toBe(http.spanId);
    expect(claim.kind).toBe(3);
    expect(handler.parentSpanId).toBe(request.spanId);
    expect(handler.kind).toBe(2);
    expect(ancestors(sql)).toContain(handler.spanId);
    expect(sql.attributes['db.system.name']).toBe('postgresql');
    expect(ancestors(publish)).toContain(handler.spanId);
    expect(publish.kind).toBe(4); // PRODUCER
    expect(consume.parentSpanId).toBe(publish.spanId);
    expect(consume.kind).toBe(5); // CONSUMER
    expect(consume.links).toContainEqual({ traceId: callerTrace, spanId: publish.spanId });
    expect(delivery.parentSpanId).toBe(publish.spanId);
    expect(delivery.links).toContainEqual({ traceId: callerTrace, spanId: publish.spanId });
    expect(delivery.attributes['loyalty.webhook.outcome']).toBe('delivered');
    // Identity consumed the same event in the same trace.
    must(w.mailer, 'identity consumer');
  }, 120_000); // its own waits: up to 60 s for the delivery, 15 s more for every span

  it('traces mail sends and gives a new trace to a request that brings none', async () => {
    // A registration's code: transactional mail, sent whatever the member's consents.
    const res0 = await fetch(`${gw}/api/v1/auth/member/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...creds },
      body: JSON.stringify({ name: 'Mailed', email: 'mailed@example.com', phone: '+447700900123' }),
    });
    expect(res0.status, await res0.clone().text()).toBe(200);
    await sink.waitFor('mailed@example.com', () => true, 30_000);
    const deadline = Date.now() + 15_000;
    while (!otlp.spans.some((s) => s.service === 'loyalty-identity' && /^smtp send /.test(s.name))) {
      if (Date.now() > deadline) throw new Error('no mail span');
      await new Promise((r) => setTimeout(r, 250));
    }
    const res = await fetch(`${gw}/healthz`);
    expect(res.headers.get('traceparent')).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  });
});
