import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Subjects, type DomainEvent } from '@loyalty/contracts';
import { createTestDatabase } from '../../../test/support/system.ts';
import { connectAs } from '../../../test/support/nats.ts';
import {
  createLogger,
  createPool,
  EventConsumer,
  ensureEventStream,
  migrate,
  Outbox,
  withTransaction,
  type Pool,
} from '../src/index.ts';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: Pool;
let nc: NatsConnection;
const subjects = new Subjects(`t${randomBytes(5).toString('hex')}`);
const log = createLogger('test', 'silent');

beforeAll(async () => {
  db = await createTestDatabase();
  // The runtime's shared tables (outbox, processed events) in a schema of its own, no service migrations.
  await migrate({ databaseUrl: db.url, schema: 'svc', dir: mkdtempSync(path.join(tmpdir(), 'no-migrations-')), log });
  pool = createPool(db.url, 4, log, 'outbox-test');
  nc = await connectAs('admin');
  await ensureEventStream(nc, subjects);
});
afterAll(async () => {
  const jsm = await nc.jetstreamManager();
  await jsm.streams.delete(subjects.streamName()).catch(() => undefined);
  await nc.drain();
  await pool.end();
  await db.drop();
});

it('publishes committed events once, drops rolled-back ones, and a consumer acts on each event once', async () => {
  const seen: DomainEvent[] = [];
  const consumer = new EventConsumer({
    nc,
    subjects,
    pool,
    schema: 'svc',
    durable: 'test-consumer',
    filterSubject: subjects.event('ledger', 'points_earned'),
    log,
    handle: async (event) => {
      seen.push(event);
    },
  });
  await consumer.start();
  const outbox = new Outbox({ pool, nc, subjects, service: 'ledger', schema: 'svc', log, intervalMs: 50 });

  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    ids.push(
      await withTransaction(pool, (c) =>
        outbox.record(c, { type: 'points_earned', tenantId: 1, data: { member_id: i } }),
      ),
    );
  }
  await expect(
    withTransaction(pool, async (c) => {
      await outbox.record(c, { type: 'points_earned', tenantId: 1, data: { member_id: 99 } });
      throw new Error('rolled back');
    }),
  ).rejects.toThrow('rolled back');

  outbox.start();
  await until(() => seen.length >= 3);
  // Publishing the same rows again (a relay that crashed before marking them) is de-duplicated by JetStream.
  await pool.query('UPDATE svc.outbox SET published_at = NULL');
  outbox.written(pool);
  await until(
    async () =>
      (await pool.query('SELECT count(*)::int AS n FROM svc.outbox WHERE published_at IS NULL')).rows[0].n === 0,
  );
  // A redelivered event (same id, new message) has no second effect.
  const js = nc.jetstream();
  const first = (await pool.query('SELECT payload FROM svc.outbox WHERE id = $1', [ids[0]])).rows[0].payload;
  await js.publish(subjects.event('ledger', 'points_earned'), JSON.stringify(first), { msgID: `redelivery-${ids[0]}` });
  await new Promise((r) => setTimeout(r, 500));
  await outbox.stop();
  await consumer.stop();

  expect(seen.map((e) => e.id).sort()).toEqual([...ids].sort());
  expect(seen.map((e) => e.data.member_id).sort()).toEqual([0, 1, 2]);
  expect(seen[0]).toMatchObject({ type: 'ledger.points_earned', tenant_id: 1 });
  const processed = await pool.query('SELECT count(*)::int AS n FROM svc.processed_events');
  expect(processed.rows[0].n).toBe(3);
});

it('handles up to `concurrency` events at once, each once, a duplicate delivered alongside included', async () => {
  let running = 0;
  let most = 0;
  const seen: string[] = [];
  const consumer = testConsumer('test-concurrent', 'cashback_earned', {
    concurrency: 4,
    handle: async (event) => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 50));
      seen.push(event.id);
      running -= 1;
    },
  });
  await consumer.start();
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) {
    ids.push(await publishEvent('cashback_earned', `concurrent-${i}`, { i }));
    if (i === 5) await publishEvent('cashback_earned', `concurrent-${i}`, { i }, 'again'); // same event, another message
  }
  await until(() => seen.length >= 12);
  await new Promise((r) => setTimeout(r, 300));
  await consumer.stop();
  expect([...seen].sort()).toEqual([...ids].sort());
  expect(most).toBeGreaterThan(1);
  expect(most).toBeLessThanOrEqual(4);
});

it('asks `relevant` about the events delivered together at once, acknowledges the rejected ones without handling or recording them, and handles the others once', async () => {
  const seen: number[] = [];
  const batches: number[][] = [];
  const consumer = testConsumer('test-relevant', 'points_refunded', {
    relevant: async (events) => {
      batches.push(events.map((e) => e.data.i as number));
      return events.map((e) => (e.data.i as number) % 2 === 0);
    },
    handle: async (event) => {
      seen.push(event.data.i as number);
    },
  });
  // Stored before the consumer starts, so its first pull delivers them together.
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) ids.push(await publishEvent('points_refunded', `relevant-${i}`, { i }));
  await consumer.start();
  await until(() => seen.length >= 3);
  await new Promise((r) => setTimeout(r, 300)); // a wrongly handled odd one would show up by now
  // Events published now arrive one by one and are still asked about.
  ids.push(await publishEvent('points_refunded', 'relevant-6', { i: 6 }));
  await until(() => seen.length >= 4);
  await consumer.stop();
  expect(seen).toEqual([0, 2, 4, 6]); // in stream order
  expect(batches.flat().sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
  expect(Math.max(...batches.map((b) => b.length))).toBeGreaterThan(1);
  const { rows } = await pool.query<{ event_id: string }>(
    `SELECT event_id FROM svc.processed_events WHERE consumer = 'test-relevant' ORDER BY event_id`,
  );
  expect(rows.map((r) => r.event_id)).toEqual([ids[0], ids[2], ids[4], ids[6]]);
});

it('redelivers every event of a batch whose relevance check failed', async () => {
  let failures = 1;
  const seen: number[] = [];
  const consumer = testConsumer('test-relevant-fails', 'points_redeemed', {
    relevant: async (events) => {
      if (failures-- > 0) throw new Error('database away');
      return events.map(() => true);
    },
    handle: async (event) => {
      seen.push(event.data.i as number);
    },
  });
  for (let i = 0; i < 3; i++) await publishEvent('points_redeemed', `fails-${i}`, { i });
  await consumer.start();
  await until(() => seen.length >= 3, 10_000); // redelivered after the nak delay (2 s)
  await consumer.stop();
  expect([...seen].sort()).toEqual([0, 1, 2]);
});

it("waits for `admit` before an event's transaction, holding no connection meanwhile", async () => {
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let asked = 0;
  const seen: number[] = [];
  const consumer = testConsumer('test-admit', 'reward_claimed', {
    admit: async () => {
      asked += 1;
      await gate;
    },
    handle: async (event) => {
      seen.push(event.data.i as number);
    },
  });
  await consumer.start();
  await publishEvent('reward_claimed', 'admit-0', { i: 0 });
  await until(() => asked > 0);
  const waiting = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
  );
  expect(waiting.rows[0]!.n).toBe(0);
  expect(seen).toEqual([]);
  open();
  await until(() => seen.length === 1);
  await consumer.stop();
  expect(seen).toEqual([0]);
});

/** A consumer of the ledger's `type` events in the test schema. */
function testConsumer(
  durable: string,
  type: string,
  opts: Pick<ConstructorParameters<typeof EventConsumer>[0], 'handle' | 'concurrency' | 'relevant' | 'admit'>,
) {
  return new EventConsumer({
    nc,
    subjects,
    pool,
    schema: 'svc',
    durable,
    filterSubject: subjects.event('ledger', type),
    log,
    ...opts,
  });
}

/** Publish a ledger event with id `<name>-<root>` straight to JetStream (`again`: the same event as another message). */
async function publishEvent(type: string, name: string, data: Record<string, unknown>, again = ''): Promise<string> {
  const id = `${name}-${subjects.root}`;
  const body = JSON.stringify({
    id,
    type: `ledger.${type}`,
    tenant_id: 1,
    occurred_at: new Date().toISOString(),
    data,
  });
  await nc.jetstream().publish(subjects.event('ledger', type), body, { msgID: again ? `${id}-${again}` : id });
  return id;
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}
