import {
  jsonCodec,
  packageDir,
  ReplayStore,
  runService,
  ServiceClient,
  systemClock,
  type Clock,
  type Logger,
  type RunningService,
} from '@loyalty/runtime';
import { accounting } from './accounting.ts';
import { CardCache } from './card-cache.ts';
import { cardCatalogue } from './card-catalogue.ts';
import { cashbackProduct } from './products/cashback.ts';
import type { LedgerConfig } from './config.ts';
import { ledgerEndpoints } from './endpoints.ts';
import { memberDirectory } from './clients.ts';
import { memberPins } from './member-pins.ts';
import { pointsProduct } from './products/points.ts';
import { holdsOf } from './lots/holds.ts';
import { LotSweeper, type LotSweep } from './lots/sweeper.ts';
import { PostingBatcher } from './posting-batcher.ts';
import { quotes } from './products/quotes.ts';
import { staffDesk } from './staff-desk.ts';
import { postMany } from './store/accounts.ts';

export const SERVICE_VERSION = '0.2.0';

export interface RunningLedger extends RunningService {
  /** Run one lot sweep now (settle due accounts, warn of expiries, release overdue holds): tests, benchmarks. */
  sweepLots(): Promise<LotSweep>;
}

export interface LedgerOptions {
  log?: Logger;
  /** Source of time for journal timestamps and the PIN lock (tests pass a ManualClock). */
  clock?: Clock;
}

/** Composition root: config -> connections -> endpoints -> shutdown. */
export async function startLedger(config: LedgerConfig, opts: LedgerOptions = {}): Promise<RunningLedger> {
  let sweeper: LotSweeper | undefined;
  const running = await runService({
    name: 'ledger',
    version: SERVICE_VERSION,
    config,
    log: opts.log,
    clock: opts.clock,
    migrationsDir: packageDir(import.meta.url, '../migrations'),
    async setup({ pool, nc, subjects, log, metrics, outbox }) {
      const clock = opts.clock ?? systemClock;
      // Cards are cached per replica; a replica that changes a card tells every other one.
      const cards = new CardCache(pool, config.CARD_CACHE_TTL_MS);
      const cardChanges = nc.subscribe(subjects.cardsChanged(), {
        callback: (_err, msg) => {
          try {
            cards.forget((msg.json() as { card_id: number }).card_id);
          } catch {
            /* a malformed broadcast changes nothing */
          }
        },
      });
      const cardChanged = (cardId: number) => {
        cards.forget(cardId);
        nc.publish(subjects.cardsChanged(), jsonCodec.encode({ card_id: cardId }));
      };
      const postingsPerStatement = metrics.histogram(
        'loyalty_ledger_postings_per_statement',
        'Postings made by one posting statement outside a transaction (group commit)',
        [1, 2, 4, 8, 16, 32, 64, 100],
      );
      const pins = memberPins({
        pool,
        clock,
        policy: {
          maxAttempts: config.PIN_MAX_ATTEMPTS,
          lockMs: config.PIN_LOCK_MINUTES * 60_000,
          maxLockMs: config.PIN_MAX_LOCK_MINUTES * 60_000,
        },
      });
      const client = new ServiceClient(nc, subjects, { timeoutMs: config.REQUEST_TIMEOUT_MS, log });
      const deps = {
        pool,
        clock,
        pins,
        cards,
        members: memberDirectory(client, config.MEMBER_CACHE_TTL_MS),
        outbox,
        replays: new ReplayStore(pool, 'ledger'),
        postings: new PostingBatcher((direction, postings) => postMany(pool, direction, postings), {
          statements: config.POSTING_STATEMENTS,
          maxBatch: 100,
          observe: (n) => postingsPerStatement.observe(n),
        }),
        expiredSubjects: lotSubjects('expired'),
      };
      const books = accounting(deps);
      const holds = holdsOf(deps, books);
      sweeper = new LotSweeper({
        pool,
        clock,
        log,
        metrics,
        outbox,
        holds,
        intervalMs: config.LOT_SWEEP_INTERVAL_MS,
        batch: config.LOT_SWEEP_BATCH,
        expired: lotSubjects('expired'),
        expiring: lotSubjects('expiring'),
      });
      sweeper.start();
      const cashback = cashbackProduct(deps, books);
      const points = pointsProduct(deps, books, holds);
      return {
        endpoints: ledgerEndpoints({
          cards: cardCatalogue(pool, outbox, cardChanged),
          cashback,
          points,
          holds,
          quotes: quotes(deps, books),
          pins,
          desk: staffDesk(deps, books, { points, cashback }),
        }),
        stop: async () => {
          cardChanges.unsubscribe();
          await sweeper?.stop();
        },
      };

      function lotSubjects(what: 'expired' | 'expiring') {
        return {
          points: subjects.event('ledger', `points_${what}`),
          cashback: subjects.event('ledger', `cashback_${what}`),
        };
      }
    },
  });
  return { ...running, sweepLots: () => sweeper!.sweep() };
}
