import { get } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NatsConnection } from 'nats';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import { connectAs } from '../support/nats.ts';
import { pointsCard } from '../support/ledger.ts';

/**
 * Exports with backpressure: a journal export of about 44 MB (400,000 rows written with SQL) read
 * by a client that stops reading for a while. Once the sockets' buffers are full the ledger is
 * asked for no more pages (the gateway awaits the client before it asks for the next), so nothing
 * piles up in memory ahead of a slow client; when the client reads again the whole file arrives,
 * one request a 512 KB page. The ledger's page requests are watched on NATS (a plain subscription
 * sees a copy of each). The memory of the processes themselves at 10,000,000 rows is measured by
 * `npm run bench -- --exports` (docs/benchmarks.md).
 */
let sys: TestSystem;
let nc: NatsConnection;
let creds: { tenantId: number; appId: string; apiKey: string };
let card: number;
const ROWS = 400_000;

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger'] });
  creds = await sys.tenant({ scopes: ['programme_manage'] });
  card = await pointsCard(sys, creds.tenantId);
  await sys.db.query(
    `INSERT INTO ledger.accounts (card_id, member_id, tenant_id, created_at, updated_at)
     SELECT $1, 700000000 + a, $2, now(), now() FROM generate_series(1, 1000) a`,
    [card, creds.tenantId],
  );
  await sys.db.query(
    `INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, purchase_cents, reference, created_at)
     SELECT $1, $2, 700000001 + g % 1000, 'staff_added_points', 10, 10, 1000, 'memory-test-reference-' || g,
            timestamptz '2025-01-01T00:00:00Z' + g * interval '1 millisecond'
       FROM generate_series(1, $3::int) g`,
    [creds.tenantId, card, ROWS],
  );
  nc = await connectAs('admin', { url: sys.env.NATS_URL });
}, 180_000);
afterAll(async () => {
  await nc?.close();
  await sys?.stop();
}, 120_000);

const mb = (bytes: number) => Math.round(bytes / 1e5) / 10;

describe('a streamed export and a client that stops reading', () => {
  it('asks for no page while the client does not read, and delivers the whole file', async () => {
    let pages = 0;
    const watch = nc.subscribe(`${sys.env.SUBJECT_ROOT}.ledger.exports.download`);
    void (async () => {
      for await (const _ of watch) pages++;
    })();
    const res = await new Promise<IncomingMessage>((resolve, reject) =>
      get(
        `${sys.url}/api/v1/exports/journal?card_id=${card}&format=csv`,
        { headers: { 'X-App-Id': creds.appId, 'X-Api-Key': creds.apiKey } },
        resolve,
      ).on('error', reject),
    );
    expect(res.statusCode).toBe(200);
    let bytes = 0;
    let lines = 0;
    const count = (b: Buffer) => {
      bytes += b.length;
      for (let i = 0; i < b.length; i++) if (b[i] === 10) lines++;
    };
    // The first chunk, then nothing read: the sockets' buffers fill, then the reads must stop.
    const first = await new Promise<Buffer>((resolve) => res.once('data', resolve));
    res.pause();
    count(first);
    let pagesAtPause = pages;
    let stableSince = Date.now();
    for (const started = Date.now(); Date.now() - stableSince < 1500 && Date.now() - started < 30_000;) {
      await new Promise((r) => setTimeout(r, 100));
      if (pages !== pagesAtPause) [pagesAtPause, stableSince] = [pages, Date.now()];
    }
    await new Promise((r) => setTimeout(r, 1500));
    expect(pages, 'no page asked for while the client does not read').toBe(pagesAtPause);
    try {
      for await (const chunk of res) count(chunk as Buffer);
    } finally {
      res.destroy();
    }
    watch.unsubscribe();
    expect(lines - 1, 'every row arrived (one line each, after the header)').toBe(ROWS);
    expect(bytes).toBeGreaterThan(40e6);
    const total = Math.ceil(bytes / (512 * 1024));
    expect(pages, 'about one request a 512 KB page').toBeGreaterThanOrEqual(total);
    // Reads are sized a little under a page (so that a page needs no cut by size): pages are ~97 % full.
    expect(pages).toBeLessThanOrEqual(Math.ceil(total / 0.95) + 2);
    // While it did not read, the pages ahead of the client were what the sockets' buffers hold.
    expect(pagesAtPause).toBeLessThan(total / 2);
    console.log(`export ${mb(bytes)} MB in ${pages} pages; ${pagesAtPause} asked for while the client paused`);
  }, 300_000);
});
