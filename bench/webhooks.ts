// The webhooks scenario, against a healthy receiver on this machine (bench/webhook-receiver.mjs, a
// process of its own that answers 200 at once):
//   steady:   one endpoint asking for points.earned; points earns through the gateway at a steady
//             rate (500/s by default), so as many deliveries a second; event-to-delivery latency
//             from the event's created_at (the ledger's posting) to its arrival, p50/p99. The whole
//             path: gateway, ledger, its outbox relay, JetStream, the webhooks service, HTTP.
//   capacity: two endpoints; the webhooks replica is stopped, N domain events are put on the stream
//             (as the ledger's outbox relay publishes them), and the replica is started again: the
//             rate at which it drains that backlog (2N deliveries, first arrival to last) is what
//             one replica sustains with every other service idle.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Subjects } from '@loyalty/contracts';
import { connectAs } from '../test/support/nats.ts';
import { repoRoot } from '../test/support/cluster.ts';
import type { Api } from './api.ts';
import { runHttp } from './load.ts';
import type { Fixture } from './provision.ts';

export const WEBHOOK_TARGETS = { deliveries_per_s: 1000, p99_ms: 1000, rate_per_s: 500 };

export interface WebhooksReport {
  receiver: string;
  /** One endpoint, points earns through the gateway at a steady rate. */
  steady: {
    events_per_s_target: number;
    seconds: number;
    earns: number;
    earns_per_s: number;
    earn_errors: number;
    deliveries: number;
    deliveries_per_s: number;
    p50_ms: number;
    p99_ms: number;
    max_ms: number;
    missing: number;
    duplicates: number;
  };
  /** Two endpoints, a backlog drained by one replica. */
  capacity:
    | {
        events: number;
        deliveries: number;
        publish_seconds: number;
        /** First arrival to last. */
        seconds: number;
        /** The replica's start to the last arrival (its start-up included). */
        seconds_from_start: number;
        deliveries_per_s: number;
        missing: number;
      }
    | { skipped: string };
  targets: typeof WEBHOOK_TARGETS;
}

type Row = [path: string, eventId: string | null, createdAt: number, at: number];

async function startReceiver(): Promise<{
  url: string;
  records: () => Promise<Row[]>;
  reset: () => Promise<void>;
  stop: () => Promise<void>;
}> {
  const child = spawn(process.execPath, [path.join(repoRoot, 'bench', 'webhook-receiver.mjs')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
    child.once('exit', (code) => reject(new Error(`the webhook receiver exited (${code})`)));
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    records: async () => (await (await fetch(`${url}/_records`)).json()) as Row[],
    reset: async () => void (await fetch(`${url}/_reset`, { method: 'POST' })),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
const round = (v: number, d = 1) => Math.round(v * 10 ** d) / 10 ** d;

/** Poll the receiver until `expected` deliveries of `paths` arrived (or the time is up). */
async function waitForDeliveries(records: () => Promise<Row[]>, expected: number, maxSeconds: number): Promise<Row[]> {
  const deadline = Date.now() + maxSeconds * 1000;
  for (;;) {
    const rows = await records();
    if (rows.length >= expected || Date.now() > deadline) return rows;
    await new Promise((r) => setTimeout(r, 250));
  }
}

function latencies(rows: Row[]): { p50: number; p99: number; max: number } {
  const ms = rows.map((r) => r[3] - r[2]).sort((a, b) => a - b);
  return { p50: round(percentile(ms, 50), 1), p99: round(percentile(ms, 99), 1), max: round(ms.at(-1) ?? NaN, 1) };
}

const distinctDeliveries = (rows: Row[]) => new Set(rows.map((r) => `${r[0]} ${r[1]}`)).size;

export async function measureWebhooks(opts: {
  api: Api;
  fixture: Fixture;
  url: string;
  /** The started system's stream and webhooks replica (capacity); null: a running system (--url). */
  stream: {
    natsUrl: string;
    root: string;
    pauseWebhooks: () => Promise<void>;
    resumeWebhooks: () => Promise<void>;
  } | null;
  seconds: number;
  rate: number;
  capacityEvents: number;
  connections: number;
  log: (line: string) => void;
}): Promise<WebhooksReport> {
  const { api, fixture: f, log } = opts;
  const receiver = await startReceiver();
  const endpointIds: number[] = [];
  const endpoint = async (p: string): Promise<number> => {
    const { endpoint: e } = await api.ok<{ endpoint: { id: number } }>(f.app, 'POST', '/api/v1/webhooks/endpoints', {
      body: { url: `${receiver.url}${p}`, event_types: ['points.earned'] },
    });
    endpointIds.push(e.id);
    return e.id;
  };
  const remove = async (id: number) => {
    await api.call(f.app, 'DELETE', `/api/v1/webhooks/endpoints/${id}`).catch(() => undefined);
    endpointIds.splice(endpointIds.indexOf(id), 1);
  };
  try {
    const steadyEndpoint = await endpoint('/steady');
    log(`webhooks: steady ${opts.rate} points earns/s for ${opts.seconds} s, one endpoint`);
    let i = 0;
    const earned = await runHttp({
      url: opts.url,
      connections: Math.max(8, Math.min(opts.connections, 64)),
      seconds: opts.seconds,
      overallRate: opts.rate,
      headers: { 'x-app-id': f.app.appId, 'x-api-key': f.app.apiKey },
      next: () => ({
        method: 'POST',
        path: '/api/v1/loyalty/points/earn',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          card_id: f.pointsCardId,
          member_id: f.members[i++ % f.members.length]!,
          purchase_amount: 5,
        }),
      }),
    });
    const okEarns = earned.statuses['200'] ?? 0;
    const rows = await waitForDeliveries(receiver.records, okEarns, 120);
    await remove(steadyEndpoint);
    const steadyLatency = latencies(rows);
    const steady = {
      events_per_s_target: opts.rate,
      seconds: earned.seconds,
      earns: okEarns,
      earns_per_s: round(okEarns / earned.seconds),
      earn_errors: earned.errors,
      deliveries: rows.length,
      deliveries_per_s: round(rows.length / earned.seconds),
      p50_ms: steadyLatency.p50,
      p99_ms: steadyLatency.p99,
      max_ms: steadyLatency.max,
      missing: Math.max(0, okEarns - distinctDeliveries(rows)),
      duplicates: rows.length - distinctDeliveries(rows),
    };
    log(
      `webhooks steady: ${steady.earns_per_s} earns/s, ${steady.deliveries_per_s} deliveries/s, event to delivery p50 ${steady.p50_ms} ms, p99 ${steady.p99_ms} ms, ${steady.missing} missing`,
    );

    let capacity: WebhooksReport['capacity'] = {
      skipped: opts.stream ? 'no events asked for (--webhook-events 0)' : 'a running system (--url)',
    };
    if (opts.stream && opts.capacityEvents > 0) {
      const stream = opts.stream;
      await receiver.reset();
      const endpoints = [await endpoint('/a'), await endpoint('/b')];
      log(
        `webhooks: capacity, a backlog of ${opts.capacityEvents} events for ${endpoints.length} endpoints, drained by one replica`,
      );
      await stream.pauseWebhooks();
      const nc = await connectAs('admin', { url: stream.natsUrl });
      const subject = new Subjects(stream.root).event('ledger', 'points_earned');
      const js = nc.jetstream();
      const injected = new Set<string>();
      const started = Date.now();
      try {
        for (let n = 0; n < opts.capacityEvents; n += 500) {
          const batch = Array.from({ length: Math.min(500, opts.capacityEvents - n) }, (_, k) => {
            const id = randomUUID();
            injected.add(id);
            const envelope = {
              id,
              type: 'ledger.points_earned',
              tenant_id: f.tenantId,
              occurred_at: new Date().toISOString(),
              data: {
                member_id: f.members[(n + k) % f.members.length]!,
                card_id: f.pointsCardId,
                points: 5,
                purchase_amount: 5,
                reference: null,
                event: 'staff_added_points',
                transaction_id: n + k + 1,
                previous_balance: 0,
                new_balance: 5,
              },
            };
            return js.publish(subject, JSON.stringify(envelope), { msgID: id });
          });
          await Promise.all(batch);
        }
      } finally {
        await nc.close();
      }
      const publishSeconds = (Date.now() - started) / 1000;
      const resumed = performance.timeOrigin + performance.now();
      await stream.resumeWebhooks();
      // Only the injected events count (a late delivery of the steady phase may still come in).
      const mine = async () => (await receiver.records()).filter((r) => r[1] !== null && injected.has(r[1]));
      const expected = opts.capacityEvents * endpoints.length;
      const got = await waitForDeliveries(mine, expected, 300);
      const arrivals = got.map((r) => r[3]).sort((a, b) => a - b);
      const span = arrivals.length > 1 ? (arrivals.at(-1)! - arrivals[0]!) / 1000 : NaN;
      capacity = {
        events: opts.capacityEvents,
        deliveries: got.length,
        publish_seconds: round(publishSeconds, 2),
        seconds: round(span, 2),
        seconds_from_start: round(((arrivals.at(-1) ?? resumed) - resumed) / 1000, 2),
        deliveries_per_s: round(got.length / span),
        missing: Math.max(0, expected - distinctDeliveries(got)),
      };
      log(
        `webhooks capacity: ${capacity.deliveries} deliveries in ${capacity.seconds} s = ${capacity.deliveries_per_s}/s (${capacity.seconds_from_start} s from the replica's start), ${capacity.missing} missing`,
      );
    }
    return {
      receiver: 'bench/webhook-receiver.mjs on 127.0.0.1: answers 200 at once',
      steady,
      capacity,
      targets: WEBHOOK_TARGETS,
    };
  } finally {
    for (const id of [...endpointIds]) await remove(id);
    await receiver.stop();
  }
}
