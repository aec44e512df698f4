import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { clusterEnv } from '../support/cluster-env.ts';
import { Cluster } from '../support/cluster.ts';
import { createTestDatabase, OPERATOR_TOKEN, testPool } from '../support/system.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * Webhooks scale by replicas and survive losing one: two webhooks replicas (compiled, each its own
 * process) share the event stream; one is killed (SIGKILL) in the middle of a burst of earns. The
 * deliveries it held come back when their lease ends and the survivor sends them: every event
 * reaches the receiver (at least once; duplicates are allowed and counted), none is lost.
 */
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

describe('webhooks scale-out', () => {
  it('delivers every event of a burst while a webhooks replica is killed', async () => {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    const receiver = await new WebhookReceiver().start();
    cleanups.push(() => receiver.stop());
    // A receiver that takes a little time, so the killed replica has deliveries in flight.
    receiver.respond(() => ({ status: 200, delayMs: 25 }));
    const { env, root } = clusterEnv(db.url, 'hooks', {
      MAIL_NOTIFICATIONS_PER_SECOND: '0',
      SMTP_URL: 'smtp://127.0.0.1:1',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      // A short lease, so the dead replica's deliveries come back within the test.
      WEBHOOK_LEASE_MS: '8000',
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_POLL_INTERVAL_MS: '200',
    });
    const cluster = new Cluster(env, `${process.cwd()}/var/cluster-logs/webhooks-kill-${root}`);
    cleanups.push(() => cluster.stop());
    await cluster.add('identity');
    await cluster.add('ledger');
    await cluster.add('webhooks', 2);
    await cluster.add('gateway');
    const gw = cluster.of('gateway')[0]!.url;

    const call = async <T>(method: string, path: string, headers: Record<string, string>, body?: unknown) => {
      const res = await fetch(`${gw}${path}`, {
        method,
        headers: { ...headers, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const out = (await res.json()) as { success: boolean; data: T };
      if (!out.success) throw new Error(`${method} ${path}: ${JSON.stringify(out)}`);
      return out.data;
    };
    const operator = { authorization: `Bearer ${OPERATOR_TOKEN}` };
    const { tenant } = await call<{ tenant: { id: number } }>('POST', '/admin/v1/tenants', operator, {
      name: 'hooks',
      sandbox: true,
    });
    const { app } = await call<{ app: { app_id: string; api_key: string } }>(
      'POST',
      `/admin/v1/tenants/${tenant.id}/apps`,
      operator,
      { name: 'hooks', scopes: ['points_write', 'webhooks_manage'] },
    );
    const { card } = await call<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenant.id}/cards`, operator, {
      name: 'Points',
      reward_system: 'points',
      points_ratio: 1,
    });
    const creds = { 'x-app-id': app.app_id, 'x-api-key': app.api_key };
    await call(
      'POST',
      '/api/v1/webhooks/endpoints',
      { ...creds, 'idempotency-key': randomUUID() },
      {
        url: receiver.url('/burst'),
        event_types: ['points.earned'],
      },
    );

    const total = 800;
    const transactions: number[] = [];
    let started = 0;
    let killed: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | undefined;
    const worker = async () => {
      while (started < total) {
        const n = started++;
        if (n === 250) killed = cluster.of('webhooks')[0]!.signal('SIGKILL');
        const earned = await call<{ transaction_id: number }>(
          'POST',
          '/api/v1/loyalty/points/earn',
          { ...creds, 'idempotency-key': `burst-${n}` },
          { card_id: card.id, email: `m${n % 40}@burst.example`, purchase_amount: 10, reference: `burst-${n}` },
        );
        transactions.push(earned.transaction_id);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    expect(await killed).toEqual({ code: null, signal: 'SIGKILL' });

    // Every earn's event arrives: the killed replica's share after its lease ran out.
    const expected = new Set(transactions);
    const deadline = Date.now() + 90_000;
    const seen = () => new Set(receiver.received.map((r) => r.event.data.transaction_id as number));
    while ([...expected].some((t) => !seen().has(t)) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 250));
    const missing = [...expected].filter((t) => !seen().has(t));
    expect(missing, `${missing.length} of ${total} events never arrived`).toEqual([]);

    // Every delivery ends delivered in the log; duplicates (at least once) are few and counted.
    const pool = testPool(db.url, 1);
    cleanups.push(() => pool.end());
    const waitDelivered = Date.now() + 30_000;
    let states: Record<string, number> = {};
    do {
      const { rows } = await pool.query<{ status: string; n: number }>(
        `SELECT status, count(*)::int AS n FROM webhooks.deliveries GROUP BY status`,
      );
      states = Object.fromEntries(rows.map((r) => [r.status, r.n]));
      if (states.delivered === total) break;
      await new Promise((r) => setTimeout(r, 250));
    } while (Date.now() < waitDelivered);
    expect(states).toEqual({ delivered: total });
    const duplicates = receiver.received.length - expected.size;
    console.log(`webhooks kill: ${total} events, ${duplicates} delivered twice (at least once)`);
    expect(duplicates).toBeLessThan(total);
    // The survivor is still up.
    expect(cluster.of('webhooks')[1]!.exitCode).toBeNull();
  }, 240_000);
});
