import { identityOperations } from '@loyalty/contracts';
import { ledgerTenantTables } from './tenant-tables.ts';
import {
  addExportEndpoints,
  addImportEndpoints,
  packageDir,
  ReplayStore,
  runService,
  ServiceClient,
  type Clock,
  type Logger,
  type PeriodicTask,
  type RunningService,
  type ServiceDeclaration,
  type ServiceRuntime,
} from '@loyalty/runtime';
import { accounting, type LedgerDeps } from './accounting.ts';
import { CardCache } from './card-cache.ts';
import { cardCatalogue } from './card-catalogue.ts';
import { cashbackProduct } from './products/cashback.ts';
import type { LedgerConfig } from './config.ts';
import { ledgerConsumers } from './consumers.ts';
import { ledgerEndpoints } from './endpoints.ts';
import { forgetErasedMembers, memberCodes, memberDirectory } from './clients.ts';
import { memberPins } from './member-pins.ts';
import { ledgerMemberData } from './member-data.ts';
import { pointsProduct } from './products/points.ts';
import { holdsOf } from './lots/holds.ts';
import type { LotSweep, LotSweeper } from './lots/sweeper.ts';
import type { TierSweep, TierSweeper } from './tiers/sweeper.ts';
import { RECOMPUTE_JOB, recomputeHandler } from './tiers/recompute.ts';
import { PostingBatcher } from './posting-batcher.ts';
import { quotes } from './products/quotes.ts';
import { MemberEvents } from './products/member-events.ts';
import { RuleBook } from './rule-book.ts';
import { staffDesk } from './staff-desk.ts';
import { TierBook } from './tier-book.ts';
import { postMany } from './store/accounts.ts';
import { findCard } from './store/cards.ts';
import { ledgerTasks } from './tasks.ts';
import { Transfers } from './transfers/transfers.ts';
import { reportsOf } from './reports/index.ts';
import { MemberMerges } from './merges/member-merge.ts';
import { ledgerImports } from './imports/index.ts';
import { ledgerExports } from './exports.ts';

export const SERVICE_VERSION = '0.2.0';

export interface LedgerHooks {
  /** Run one lot sweep now (settle due accounts, warn of expiries, release overdue holds): tests, benchmarks. */
  sweepLots(): Promise<LotSweep>;
  /** Run one tier sweep now (review tiers whose validity ended, warn of coming downgrades): tests. */
  sweepTiers(): Promise<TierSweep>;
  /** Move what credits left on merged sources now (the merge sweep): how many accounts moved (tests). */
  sweepMerges(): Promise<number>;
  /** The card cache (tests look at what it holds). */
  cards: CardCache;
  /** Fold the report deltas into the rollups now: how many were folded (tests). */
  foldReports(): Promise<number>;
}

export type RunningLedger = RunningService<LedgerHooks>;

export interface LedgerOptions {
  log?: Logger;
  /** Source of time for journal timestamps and the PIN lock (tests pass a ManualClock). */
  clock?: Clock;
}

/** Composition root: the ledger's endpoints, its lot sweeper and its card cache. */
export function startLedger(config: LedgerConfig, opts: LedgerOptions = {}): Promise<RunningLedger> {
  return runService(
    {
      name: 'ledger',
      version: SERVICE_VERSION,
      migrationsDir: packageDir(import.meta.url, '../migrations'),
      setup: (rt) => setupLedger(rt, config),
    },
    { config, ...opts },
  );
}

/** Postings outside a transaction, gathered into one statement (group commit), measured. */
function postingBatcher(rt: ServiceRuntime, config: LedgerConfig): PostingBatcher {
  const postingsPerStatement = rt.metrics.histogram(
    'loyalty_ledger_postings_per_statement',
    'Postings made by one posting statement outside a transaction (group commit)',
    [1, 2, 4, 8, 16, 32, 64, 100],
  );
  return new PostingBatcher((direction, postings) => postMany(rt.pool, direction, postings), {
    statements: config.POSTING_STATEMENTS,
    maxBatch: 100,
    observe: (n) => postingsPerStatement.observe(n),
  });
}

/** Members' redemption PINs with the card's wrong-PIN lock policy. */
function pinsOf({ pool, clock }: ServiceRuntime, config: LedgerConfig) {
  return memberPins({
    pool,
    clock,
    policy: {
      maxAttempts: config.PIN_MAX_ATTEMPTS,
      lockMs: config.PIN_LOCK_MINUTES * 60_000,
      maxLockMs: config.PIN_MAX_LOCK_MINUTES * 60_000,
    },
  });
}

/** Tiers: the ladder book, whose changes queue a recompute of the card's members. */
function tierBook(rt: ServiceRuntime, deps: LedgerDeps): TierBook {
  return new TierBook(deps, (cardId) => deps.cards.changed(cardId), {
    start: (db, card, version) =>
      rt.jobs.store.create(db, {
        tenantId: card.tenant_id,
        kind: RECOMPUTE_JOB,
        params: { card_id: card.id, version },
        now: rt.clock.now(),
      }),
    wake: () => rt.jobs.wake(),
  });
}

/** The subjects of the tier sweep's events. */
function tierSubjectsOf({ subjects }: ServiceRuntime) {
  return {
    renewed: subjects.event('ledger', 'tier_renewed'),
    downgraded: subjects.event('ledger', 'tier_downgraded'),
    warning: subjects.event('ledger', 'tier_downgrade_warning'),
  };
}

/** The recompute job's handler (tiers/recompute.ts). */
function recomputeJob(rt: ServiceRuntime) {
  return recomputeHandler({
    pool: rt.pool,
    clock: rt.clock,
    outbox: rt.outbox,
    cardOf: (tenantId, cardId) => findCard(rt.pool, tenantId, cardId),
    upgradedSubject: rt.subjects.event('ledger', 'tier_upgraded'),
  });
}

/** The subjects of the expiry events (expired, expiring) by the card's unit. */
function lotEventSubjects(subjects: ServiceRuntime['subjects']) {
  return (what: 'expired' | 'expiring') => ({
    points: subjects.event('ledger', `points_${what}`),
    cashback: subjects.event('ledger', `cashback_${what}`),
  });
}

/** The operator named a tenant: identity answers tenant_not_found unless it exists. */
function tenantCheck(client: ServiceClient) {
  return async (tenantId: number, requestId: string): Promise<void> =>
    void (await client.call(identityOperations.getTenant, { request_id: requestId, tenant_id: tenantId }, {}));
}

async function setupLedger(rt: ServiceRuntime, config: LedgerConfig): Promise<ServiceDeclaration<LedgerHooks>> {
  const { pool, nc, subjects, log, metrics, outbox, clock } = rt;
  // Cards are cached per replica; a replica that changes a card tells every other one.
  const cards = new CardCache(pool, { ttlMs: config.CARD_CACHE_TTL_MS, nc, subject: subjects.cardsChanged(), metrics });
  const pins = pinsOf(rt, config);
  const client = new ServiceClient(nc, subjects, { timeoutMs: config.REQUEST_TIMEOUT_MS, log });
  const lotSubjects = lotEventSubjects(subjects);
  const members = memberDirectory(client, config.MEMBER_CACHE_TTL_MS);
  const erasedMembers = forgetErasedMembers(nc, subjects.membersChanged(), members);
  const deps = {
    pool,
    clock,
    pins,
    cards,
    members,
    outbox,
    replays: new ReplayStore(pool, 'ledger'),
    postings: postingBatcher(rt, config),
    expiredSubjects: lotSubjects('expired'),
  };
  const books = accounting(deps);
  const holds = holdsOf(deps, books);
  const sweepers = ledgerTasks({ pool, clock, log, metrics, outbox, holds }, config, lotSubjects, tierSubjectsOf(rt));
  const merges = new MemberMerges(deps, books);
  const mergeSweeper = merges.sweeper(config.LOT_SWEEP_INTERVAL_MS, log);
  const cashback = cashbackProduct(deps, books);
  const points = pointsProduct(deps, books, holds);
  const reports = reportsOf(rt, tenantCheck(client));
  const imports = ledgerImports(rt, client);
  const exports = ledgerExports(rt, tenantCheck(client));
  return {
    endpoints: addExportEndpoints(
      addImportEndpoints(
        ledgerEndpoints({
          cards: cardCatalogue(pool, outbox, (cardId) => cards.changed(cardId), tenantCheck(client)),
          cashback,
          points,
          holds,
          quotes: quotes(deps, books),
          pins,
          desk: staffDesk(deps, books, { points, cashback }),
          rules: new RuleBook(deps, (cardId) => cards.changed(cardId)),
          memberEvents: new MemberEvents(deps, books),
          transfers: new Transfers(deps, books, memberCodes(client)),
          memberData: ledgerMemberData(pool, members),
          reports,
          tiers: tierBook(rt, deps),
          merges,
        }),
        imports,
      ),
      exports,
    ),
    tenantData: ledgerTenantTables,
    consumers: ledgerConsumers(),
    tasks: [sweepers.lotSweeper, sweepers.tierSweeper, reports.folder, mergeSweeper],
    jobs: { ...reports.jobs, [RECOMPUTE_JOB]: recomputeJob(rt), ...imports.handlers(), ...exports.handlers() },
    caches: [cards.cache, erasedMembers],
    hooks: ledgerHooks({ ...sweepers, mergeSweeper, cards, reports }),
  };
}

function ledgerHooks(parts: {
  lotSweeper: LotSweeper;
  tierSweeper: TierSweeper;
  mergeSweeper: PeriodicTask<number>;
  cards: CardCache;
  reports: { folder: { runNow(): Promise<number> } };
}): LedgerHooks {
  return {
    sweepLots: () => parts.lotSweeper.sweep(),
    sweepTiers: () => parts.tierSweeper.sweep(),
    sweepMerges: () => parts.mergeSweeper.runNow(),
    cards: parts.cards,
    foldReports: () => parts.reports.folder.runNow(),
  };
}
