import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Subjects } from '@loyalty/contracts';
import { createPool, createLogger, Metrics, startInOrder, type Pool } from '@loyalty/runtime';
import { connectAs } from '../../../test/support/nats.ts';
import { startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { until } from '../../../test/support/until.ts';
import { CardCache } from '../src/card-cache.ts';
import { pointsCard } from './support.ts';

/**
 * The ledger's card cache: a card read while its change is broadcast is not kept, a replica whose
 * NATS connection drops forgets every card (it may have missed broadcasts), and a change made on
 * the running ledger (the operator API) reaches a second replica's cache. A second replica's cache
 * over the test system's database and NATS, next to the running ledger.
 */
let sys: TestSystem;
let pool: Pool;
let nc: NatsConnection;
let cards: CardCache;
let metrics: Metrics;
let stopCaches: () => Promise<void>;
let tenantId: number;
let cardId: number;

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger'] });
  tenantId = (await sys.tenant()).tenantId;
  cardId = await pointsCard(sys, tenantId);
  pool = createPool(sys.env.DATABASE_URL ?? '', 2, createLogger('ledger', 'silent'), 'ledger');
  nc = await connectAs('ledger', { url: sys.env.NATS_URL, reconnectTimeWait: 50 });
  metrics = new Metrics('ledger');
  const subjects = new Subjects(sys.env.SUBJECT_ROOT);
  cards = new CardCache(pool, { ttlMs: 600_000, nc, subject: subjects.cardsChanged(), metrics });
  stopCaches = await startInOrder([cards.cache]);
});
afterAll(async () => {
  await stopCaches?.();
  await nc?.close();
  await pool?.end();
  await sys?.stop();
});

const lookups = async (result: 'hit' | 'miss') =>
  (await metrics.registry.getSingleMetric('loyalty_cache_lookups_total')?.get())?.values.find(
    (v) => v.labels.cache === 'ledger-cards' && v.labels.result === result,
  )?.value ?? 0;

describe('ledger card cache', () => {
  it('keeps a card it read, and answers it from memory (a hit)', async () => {
    cards.forget(cardId);
    expect((await cards.get(tenantId, cardId))?.id).toBe(cardId);
    expect(cards.cache.has(cardId)).toBe(true);
    const hits = await lookups('hit');
    expect((await cards.get(tenantId, cardId))?.id).toBe(cardId);
    expect(await lookups('hit')).toBe(hits + 1);
    expect(await cards.get(tenantId + 1, cardId)).toBeUndefined(); // another tenant's card
  });

  it('does not keep a card whose read raced a change of it', async () => {
    cards.forget(cardId);
    const read = cards.get(tenantId, cardId); // the query is on its way
    cards.forget(cardId); // the change's broadcast arrives meanwhile
    expect((await read)?.id).toBe(cardId); // it answers its own caller
    expect(cards.cache.has(cardId)).toBe(false);
    await cards.get(tenantId, cardId); // a read after the change is kept
    expect(cards.cache.has(cardId)).toBe(true);
  });

  it('forgets every card when its NATS connection drops and comes back', async () => {
    await cards.get(tenantId, cardId);
    expect(cards.cache.has(cardId)).toBe(true);
    await nc.reconnect();
    await until(() => !cards.cache.has(cardId));
    // And caches again once reconnected (a read that overlapped the reconnect is not kept).
    await until(async () => {
      await cards.get(tenantId, cardId);
      return cards.cache.has(cardId);
    });
  });

  it("forgets a card the running ledger changed (the ledger's broadcast)", async () => {
    await cards.get(tenantId, cardId);
    expect(cards.cache.has(cardId)).toBe(true);
    await sys.admin('POST', `/admin/v1/tenants/${tenantId}/cards/${cardId}`, { name: 'Renamed card' });
    await until(() => !cards.cache.has(cardId));
    expect((await cards.get(tenantId, cardId))?.name).toBe('Renamed card');
  });
});
