import { randomBytes, randomUUID } from 'node:crypto';
import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Subjects, type DomainEvent } from '@loyalty/contracts';
import { connectAs } from '../../../test/support/nats.ts';
import { createLogger, ensureEventStream, EventBatchConsumer } from '../src/index.ts';

/** The batch consumer against a real NATS server with JetStream: batches, acknowledgements, redelivery. */
let nc: NatsConnection;
const subjects = new Subjects(`b${randomBytes(5).toString('hex')}`);
const log = createLogger('test', 'silent');

beforeAll(async () => {
  nc = await connectAs('admin');
  await ensureEventStream(nc, subjects);
});
afterAll(async () => {
  const jsm = await nc.jetstreamManager();
  await jsm.streams.delete(subjects.streamName()).catch(() => undefined);
  await nc.drain();
});

function event(n: number): DomainEvent {
  return {
    id: randomUUID(),
    type: 'ledger.points_earned',
    tenant_id: 1,
    occurred_at: new Date().toISOString(),
    data: { n },
  };
}

async function publish(events: DomainEvent[]): Promise<void> {
  const js = nc.jetstream();
  await Promise.all(
    events.map((e) => js.publish(subjects.event('ledger', 'points_earned'), JSON.stringify(e), { msgID: e.id })),
  );
}

it('hands over what arrived together in batches, each event once, and redelivers a batch whose handler failed', async () => {
  const batches: number[][] = [];
  let failOnce = true;
  const consumer = new EventBatchConsumer({
    nc,
    subjects,
    durable: 'batch-test',
    filterSubject: subjects.allEvents(),
    log,
    maxBatch: 50,
    handle: async (events) => {
      const ns = events.map((e) => e.data.n as number);
      if (failOnce && ns.includes(7)) {
        failOnce = false;
        throw new Error('the database is away');
      }
      batches.push(ns);
    },
  });
  await consumer.start();
  await publish(Array.from({ length: 300 }, (_, n) => event(n)));
  const deadline = Date.now() + 20_000;
  while (new Set(batches.flat()).size < 300 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  await consumer.stop();

  const handled = batches.flat();
  expect(new Set(handled).size).toBe(300);
  // Only the failed batch came again (redelivered after its nak): nothing else twice.
  expect(handled.length).toBe(300);
  expect(failOnce).toBe(false);
  expect(Math.max(...batches.map((b) => b.length))).toBeGreaterThan(1);
  expect(Math.max(...batches.map((b) => b.length))).toBeLessThanOrEqual(50);
  // Acknowledged: a new consumer on the same durable gets nothing more.
  const again: number[] = [];
  const second = new EventBatchConsumer({
    nc,
    subjects,
    durable: 'batch-test',
    filterSubject: subjects.allEvents(),
    log,
    handle: async (events) => void again.push(...events.map((e) => e.data.n as number)),
  });
  await second.start();
  await publish([event(1000)]);
  const until = Date.now() + 10_000;
  while (!again.includes(1000) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  await second.stop();
  expect(again).toEqual([1000]);
}, 40_000);
