// The direct ceiling of the tuned services: exactly the statements the services issue now, from
// this one Node process with a pg pool at the same concurrency (ledger: its exported postMany
// through the ledger's own group commit, posting-batcher.ts, findBalance / journalPage, prepared as
// there; identity's app and session lookups of a member token), keeping what the ledger keeps per
// replica (a card and a member found by id are read once). Not the ratio's baseline
// (bench/baseline.ts is): it answers "how close to the database's limit for the very same
// statements is the full path", which includes everything around them (HTTP, gateway, NATS, the
// outbox relay, consumers, mails).
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { accountState, findBalance, JOURNAL_PAGE, PostingBatcher, postingStatement, postMany } from '@loyalty/ledger';
import { findCard, findMemberById, memberOfToken, redeemScenario, type DirectScenario } from './baseline.ts';
import type { DirectOutcome } from './load.ts';
import type { ScenarioName } from './options.ts';
import { CASHBACK_PERCENT, POINTS_RATIO, REDEEM_AMOUNT_CENTS, type Fixture, type Redeemer } from './provision.ts';

/** The ledger's default POSTING_STATEMENTS (services/ledger/src/config.ts). */
const POSTING_STATEMENTS = 2;

/**
 * One posting (credit, or debit if covered) through the ledger's group commit; false: a debit the
 * balance did not cover. One difference from the ledger: its events go to a table of the
 * benchmark's own, so the ledger's relay never sends them (the bench system's consumers would do
 * full-path work for them, and a subject of another root would reach another system).
 */
async function post(
  postings: PostingBatcher,
  k: { tenantId: number; cardId: number; memberId: number },
  direction: 'credit' | 'debit',
  m: {
    event: 'staff_added_points' | 'cashback_earned' | 'cashback_redeemed';
    amount: number;
    purchaseCents: number | null;
  },
  e: { type: string; unit: 'cents' | 'points'; data: Record<string, unknown> },
): Promise<boolean> {
  const at = new Date();
  const id = randomUUID();
  const envelope = {
    id,
    type: `ledger.${e.type}`,
    tenant_id: k.tenantId,
    occurred_at: at.toISOString(),
    data: { ...e.data, event: m.event },
  };
  const posted = await postings.post(direction, {
    account: k,
    movement: { ...m, at },
    event: { id, subject: `bench_tuned.events.ledger.${e.type}`, envelope, unit: e.unit, trace: null },
  });
  return posted !== undefined;
}

/**
 * What the ledger keeps per replica: a card and a member found by id are read once
 * (CARD_CACHE_TTL_MS, MEMBER_CACHE_TTL_MS), so in a steady state an operation costs no lookup
 * statement, and postings share statements (group commit).
 */
class Replica {
  readonly postings: PostingBatcher;
  private readonly cards = new Map<number, { id: number; currency: string }>();
  private readonly members = new Set<number>();
  constructor(
    private readonly pool: pg.Pool,
    private readonly tenantId: number,
  ) {
    // The ledger's posting statements with their events written to a table of the benchmark's own
    // (the same columns and index as ledger.outbox, but not named outbox: nothing relays it, and
    // the bench's backlog wait counts every table called outbox).
    const sink = pool.query(
      'CREATE SCHEMA IF NOT EXISTS bench_tuned; CREATE TABLE IF NOT EXISTS bench_tuned.events (LIKE ledger.outbox INCLUDING ALL)',
    );
    const statements = {
      credit: { name: 'tuned.post_credit', text: postingStatement('credit', 'bench_tuned.events') },
      debit: { name: 'tuned.post_debit', text: postingStatement('debit', 'bench_tuned.events') },
    };
    this.postings = new PostingBatcher(
      async (direction, postings) => {
        await sink;
        return postMany(pool, direction, postings, statements[direction]);
      },
      { statements: POSTING_STATEMENTS, maxBatch: 100 },
    );
  }

  async card(cardId: number): Promise<{ id: number; currency: string }> {
    let card = this.cards.get(cardId);
    if (!card) this.cards.set(cardId, (card = await findCard(this.pool, this.tenantId, cardId)));
    return card;
  }

  async member(memberId: number): Promise<void> {
    if (this.members.has(memberId)) return;
    await findMemberById(this.pool, this.tenantId, memberId);
    this.members.add(memberId);
  }
}

/** An earn by member_id without reference: card and member (known after their first use), then one posting statement. */
async function earn(
  pool: pg.Pool,
  f: Fixture,
  known: Replica,
  kind: 'points' | 'cashback',
  memberId: number,
  purchaseCents: number,
): Promise<DirectOutcome> {
  const card = await known.card(kind === 'points' ? f.pointsCardId : f.cashbackCardId);
  await known.member(memberId);
  const amount =
    kind === 'points'
      ? Math.floor((purchaseCents * POINTS_RATIO) / 100)
      : Math.floor((purchaseCents * CASHBACK_PERCENT + 50) / 100);
  const k = { tenantId: f.tenantId, cardId: card.id, memberId };
  if (kind === 'points') {
    await post(
      known.postings,
      k,
      'credit',
      { event: 'staff_added_points', amount, purchaseCents },
      {
        type: 'points_earned',
        unit: 'points',
        data: {
          member_id: memberId,
          card_id: card.id,
          points: amount,
          purchase_amount: purchaseCents / 100,
          reference: null,
        },
      },
    );
  } else {
    await post(
      known.postings,
      k,
      'credit',
      { event: 'cashback_earned', amount, purchaseCents },
      {
        type: 'cashback_earned',
        unit: 'cents',
        data: {
          member_id: memberId,
          card_id: card.id,
          amount: amount / 100,
          purchase_amount: purchaseCents / 100,
          cashback_percentage: String(CASHBACK_PERCENT),
          currency: card.currency,
          reference: null,
        },
      },
    );
  }
  return 200;
}

/** Gateway -> identity member-token check (app credentials + live session, every request), then the debit statement. */
async function redeem(pool: pg.Pool, f: Fixture, known: Replica, r: Redeemer): Promise<DirectOutcome> {
  const memberId = await memberOfToken(pool, f, r);
  const card = await known.card(f.cashbackCardId);
  const posted = await post(
    known.postings,
    { tenantId: f.tenantId, cardId: card.id, memberId },
    'debit',
    { event: 'cashback_redeemed', amount: REDEEM_AMOUNT_CENTS, purchaseCents: null },
    {
      type: 'cashback_redeemed',
      unit: 'cents',
      data: {
        member_id: memberId,
        card_id: card.id,
        amount: REDEEM_AMOUNT_CENTS / 100,
        currency: card.currency,
        reference: null,
      },
    },
  );
  if (posted) return 200;
  await findBalance(pool, card.id, memberId); // the refusal names the balance
  return 422;
}

/** One replica's state per pool (one bench run): like the services' caches, it lives across scenarios. */
const replicaOf = new WeakMap<pg.Pool, Replica>();

export function tunedScenario(
  name: ScenarioName,
  pool: pg.Pool,
  f: Fixture,
  side: 'warmup' | 'baseline',
): DirectScenario {
  const offset = side === 'warmup' ? 7919 : 0;
  const member = (i: number) => f.members[(i + offset) % f.members.length]!;
  let known = replicaOf.get(pool);
  if (!known) replicaOf.set(pool, (known = new Replica(pool, f.tenantId)));
  const lookups = known;
  switch (name) {
    case 'points_earn':
    case 'points_earn_rules': // compared with a plain earn: what the rules cost
    case 'points_earn_tiers': // the same: what tiers and tier rules cost
      return { op: (i) => earn(pool, f, lookups, 'points', member(i), (10 + (i % 90)) * 100) };
    case 'cashback_earn':
      return { op: (i) => earn(pool, f, lookups, 'cashback', member(i), 1234 + (i % 100) * 100) };
    case 'points_balance':
      return {
        async op(i) {
          const card = await lookups.card(f.pointsCardId);
          // services/ledger/src/lots/store.ts accountState: the amounts and the next expiries in one statement
          const account = await accountState(pool, card.id, member(i));
          if (account === undefined) await lookups.member(member(i));
          return 200;
        },
      };
    case 'points_history':
      return {
        async op() {
          const card = await lookups.card(f.pointsCardId);
          // services/ledger/src/store/accounts.ts journalPage: the page and the entry count in one statement
          const { rows } = await pool.query({
            name: 'tuned.journal_page',
            text: JOURNAL_PAGE,
            values: [card.id, f.historyMemberId, 20, 0],
          });
          if (rows.length === 0) await lookups.member(f.historyMemberId);
          return 200;
        },
      };
    case 'cashback_redeem':
      return redeemScenario(pool, f, side, f.redeemers.tuned, 'tuned statements', (r) => redeem(pool, f, lookups, r));
  }
}
