// The direct ceiling of the tuned services: exactly the statements the services issue now, from
// this one Node process with a pg pool at the same concurrency (ledger: store/accounts.ts post /
// findBalance / journalPage, prepared as there; identity's app and session lookups of a member
// token), keeping what the ledger keeps per replica (a card and a member found by id are read
// once). Not the ratio's baseline (bench/baseline.ts is): it answers "how close to the database's
// limit for the very same statements is the full path", which includes everything around them
// (HTTP, gateway, NATS, the outbox relay, consumers, mails). The history page statement is the
// ledger's own (imported); the posting statement is copied because its outbox row must differ in
// one column (see `post`): when the ledger's posting SQL changes, change it here too.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { JOURNAL_PAGE } from '../services/ledger/src/store/accounts.ts';
import { findCard, findMemberById, memberOfToken, redeemScenario, type DirectScenario } from './baseline.ts';
import type { DirectOutcome } from './load.ts';
import type { ScenarioName } from './options.ts';
import { CASHBACK_PERCENT, POINTS_RATIO, REDEEM_AMOUNT_CENTS, type Fixture, type Redeemer } from './provision.ts';

// The ledger's posting statement (services/ledger/src/store/accounts.ts `post`): the balance
// change, the entry count, the journal row and the outbox event in one statement, without
// BEGIN/COMMIT. One difference: the event is written as already published. The ledger's relay must
// never send the baseline's events (the bench system's consumers would do full-path work for
// them, and a subject of another root would reach another system).
const EVENT_FROM_ENTRY = `
  event AS (
    INSERT INTO ledger.outbox (id, subject, payload, published_at)
    SELECT $11, $12, jsonb_set($13::jsonb, '{data}', ($13::jsonb -> 'data') || jsonb_build_object(
      'transaction_id', entry.id,
      'previous_balance', CASE WHEN $14::boolean THEN to_jsonb(round((entry.balance_after - entry.amount) / 100.0, 2)) ELSE to_jsonb(entry.balance_after - entry.amount) END,
      'new_balance', CASE WHEN $14::boolean THEN to_jsonb(round(entry.balance_after / 100.0, 2)) ELSE to_jsonb(entry.balance_after) END)), $5
    FROM entry
  )
  SELECT id, event, amount, balance_after, created_at FROM entry`;
const JOURNAL_FROM_ACCOUNT = (sign: '' | '-') => `
  entry AS (
    INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, purchase_cents, reference, reward_id, metadata, created_at)
    SELECT $3, $1, $2, $6, ${sign}$4::bigint, account.balance, $7, $8, $9, $10, $5 FROM account
    RETURNING id, event, amount, balance_after, created_at
  ),`;
const POST = {
  credit: `
WITH account AS (
  INSERT INTO ledger.accounts AS a (card_id, member_id, tenant_id, balance, entries, created_at, updated_at) VALUES ($1, $2, $3, $4, 1, $5, $5)
  ON CONFLICT (card_id, member_id) DO UPDATE SET balance = a.balance + EXCLUDED.balance, entries = a.entries + 1, updated_at = EXCLUDED.updated_at
  RETURNING balance
),${JOURNAL_FROM_ACCOUNT('')}${EVENT_FROM_ENTRY}`,
  debit: `
WITH account AS (
  UPDATE ledger.accounts SET balance = balance - $4, entries = entries + 1, updated_at = $5
   WHERE card_id = $1 AND member_id = $2 AND balance >= $4
  RETURNING balance
),${JOURNAL_FROM_ACCOUNT('-')}${EVENT_FROM_ENTRY}`,
};

/** One posting (credit, or debit if covered); false: a debit the balance did not cover. */
async function post(
  pool: pg.Pool,
  k: { tenantId: number; cardId: number; memberId: number },
  direction: 'credit' | 'debit',
  m: { event: string; amount: number; purchaseCents: number | null },
  e: { type: string; unit: 'cents' | 'points'; data: Record<string, unknown> },
): Promise<boolean> {
  const at = new Date();
  const id = randomUUID();
  const envelope = { id, type: `ledger.${e.type}`, tenant_id: k.tenantId, occurred_at: at.toISOString(), data: { ...e.data, event: m.event } };
  const { rows } = await pool.query({
    name: `tuned.post_${direction}`,
    text: POST[direction],
    values: [k.cardId, k.memberId, k.tenantId, m.amount, at, m.event, m.purchaseCents, null, null, null, id, `bench_tuned.events.ledger.${e.type}`, JSON.stringify(envelope), e.unit === 'cents'],
  });
  return rows.length > 0;
}

/** The ledger's balance read (store/accounts.ts findBalance), prepared as there. */
async function findBalance(pool: pg.Pool, cardId: number, memberId: number): Promise<number | undefined> {
  const { rows } = await pool.query<{ balance: string }>({
    name: 'tuned.find_balance',
    text: 'SELECT balance FROM ledger.accounts WHERE card_id = $1 AND member_id = $2',
    values: [cardId, memberId],
  });
  return rows[0] ? Number(rows[0].balance) : undefined;
}

/**
 * What the ledger keeps per replica (CARD_CACHE_TTL_MS, MEMBER_CACHE_TTL_MS): a card and a member
 * found by id are read once, so in a steady state an operation costs no lookup statement.
 */
class Lookups {
  private readonly cards = new Map<number, { id: number; currency: string }>();
  private readonly members = new Set<number>();
  constructor(
    private readonly pool: pg.Pool,
    private readonly tenantId: number,
  ) {}

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
async function earn(pool: pg.Pool, f: Fixture, known: Lookups, kind: 'points' | 'cashback', memberId: number, purchaseCents: number): Promise<DirectOutcome> {
  const card = await known.card(kind === 'points' ? f.pointsCardId : f.cashbackCardId);
  await known.member(memberId);
  const amount = kind === 'points' ? Math.floor((purchaseCents * POINTS_RATIO) / 100) : Math.floor((purchaseCents * CASHBACK_PERCENT + 50) / 100);
  const k = { tenantId: f.tenantId, cardId: card.id, memberId };
  if (kind === 'points') {
    await post(pool, k, 'credit', { event: 'staff_added_points', amount, purchaseCents }, {
      type: 'points_earned',
      unit: 'points',
      data: { member_id: memberId, card_id: card.id, points: amount, purchase_amount: purchaseCents / 100, reference: null },
    });
  } else {
    await post(pool, k, 'credit', { event: 'cashback_earned', amount, purchaseCents }, {
      type: 'cashback_earned',
      unit: 'cents',
      data: { member_id: memberId, card_id: card.id, amount: amount / 100, purchase_amount: purchaseCents / 100, cashback_percentage: String(CASHBACK_PERCENT), currency: card.currency, reference: null },
    });
  }
  return 200;
}

/** Gateway -> identity member-token check (app credentials + live session, every request), then the debit statement. */
async function redeem(pool: pg.Pool, f: Fixture, known: Lookups, r: Redeemer): Promise<DirectOutcome> {
  const memberId = await memberOfToken(pool, f, r);
  const card = await known.card(f.cashbackCardId);
  const posted = await post(pool, { tenantId: f.tenantId, cardId: card.id, memberId }, 'debit', { event: 'cashback_redeemed', amount: REDEEM_AMOUNT_CENTS, purchaseCents: null }, {
    type: 'cashback_redeemed',
    unit: 'cents',
    data: { member_id: memberId, card_id: card.id, amount: REDEEM_AMOUNT_CENTS / 100, currency: card.currency, reference: null },
  });
  if (posted) return 200;
  await findBalance(pool, card.id, memberId); // the refusal names the balance
  return 422;
}


/** One set of lookups per pool (one bench run): like the services' caches, it lives across scenarios. */
const lookupsOf = new WeakMap<pg.Pool, Lookups>();

export function tunedScenario(name: ScenarioName, pool: pg.Pool, f: Fixture, side: 'warmup' | 'baseline'): DirectScenario {
  const offset = side === 'warmup' ? 7919 : 0;
  const member = (i: number) => f.members[(i + offset) % f.members.length]!;
  let known = lookupsOf.get(pool);
  if (!known) lookupsOf.set(pool, (known = new Lookups(pool, f.tenantId)));
  const lookups = known;
  switch (name) {
    case 'points_earn':
      return { op: (i) => earn(pool, f, lookups, 'points', member(i), (10 + (i % 90)) * 100) };
    case 'cashback_earn':
      return { op: (i) => earn(pool, f, lookups, 'cashback', member(i), 1234 + (i % 100) * 100) };
    case 'points_balance':
      return {
        async op(i) {
          const card = await lookups.card(f.pointsCardId);
          const balance = await findBalance(pool, card.id, member(i));
          if (balance === undefined) await lookups.member(member(i));
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
