// The baseline: the SQL work of each operation issued directly from this one Node process with a
// pg pool at the same concurrency, as a naive single-process service would do it: read the card,
// read the member, then change the balance, write the journal row and the outbox event in one
// transaction (BEGIN, three statements, COMMIT). That is also what the services did before the
// speed work; the statements are copied from their store modules of that day (ledger:
// store/cards.ts findCard, store/accounts.ts credit / debitIfCovered / findBalance /
// appendJournal, runtime recordEvent's outbox insert; identity: store/members.ts findMemberBy,
// and since lots the credit's lot and, for a debit, the lots it takes, one statement
// per lot under the account's lock, as a straightforward service would write them;
// store/apps.ts findCredentials, store/sessions.ts findLiveSession), except the history page,
// which is the ledger's current statement (see the points_history case). The services now do less
// SQL per operation than this (cached card and member, one statement per posting);
// bench/baseline-tuned.ts issues exactly their statements, and the report shows that ceiling
// beside this baseline.
//
// Left out on purpose (the full path does them, a naive service would not): the outbox relay's
// publish and mark-published after commit, identity's mail to the member on points_earned,
// referrals' consumer of every points event, and the gateway's app-key check (cached by the
// gateway, so no SQL per request in steady state).
import { createHash, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { JOURNAL_PAGE } from '@loyalty/ledger';
import type { DirectOutcome } from './load.ts';
import type { ScenarioName } from './options.ts';
import { CASHBACK_PERCENT, POINTS_RATIO, REDEEM_AMOUNT_CENTS, type Fixture, type Redeemer } from './provision.ts';

const CARD_COLUMNS = `id, tenant_id, unique_identifier, name, description, reward_system, currency,
  cashback_percentage::text AS cashback_percentage, cashback_min_cents, cashback_max_cents, allows_pin_redemption,
  points_ratio::text AS points_ratio, referrer_bonus, referee_bonus, referral_bonus_on_first_purchase, claim_lifetime_hours,
  expiry_days, pending_days, expiry_warning_days, created_at, updated_at`;
const MEMBER_COLUMNS = 'id, tenant_id, name, email, phone, accepts_emails, is_active';

export const sha256 = (v: string) => createHash('sha256').update(v).digest();

export async function findCard(
  db: pg.Pool | pg.PoolClient,
  tenantId: number,
  cardId: number,
): Promise<{ id: number; reward_system: string; currency: string }> {
  const { rows } = await db.query(`SELECT ${CARD_COLUMNS} FROM ledger.cards WHERE tenant_id = $1 AND id = $2`, [
    tenantId,
    cardId,
  ]);
  if (!rows[0]) throw new Error('card_not_found');
  return rows[0];
}

export async function findMemberById(db: pg.Pool, tenantId: number, memberId: number): Promise<void> {
  const { rows } = await db.query(`SELECT ${MEMBER_COLUMNS} FROM identity.members WHERE tenant_id = $1 AND id = $2`, [
    tenantId,
    memberId,
  ]);
  if (!rows[0]) throw new Error('member_not_found');
}

export async function findBalance(
  db: pg.Pool | pg.PoolClient,
  cardId: number,
  memberId: number,
): Promise<number | undefined> {
  const { rows } = await db.query<{ balance: string }>(
    'SELECT balance FROM ledger.accounts WHERE card_id = $1 AND member_id = $2',
    [cardId, memberId],
  );
  return rows[0] ? Number(rows[0].balance) : undefined;
}

async function appendJournal(
  db: pg.PoolClient,
  k: { tenantId: number; cardId: number; memberId: number },
  e: { event: string; amount: number; balanceAfter: number; purchaseCents: number | null; at: Date },
): Promise<number> {
  const { rows } = await db.query<{ id: string }>(
    `WITH entry AS (
       INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, purchase_cents, reference, reward_id, metadata, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id, event, amount, created_at
     ), counted AS (
       UPDATE ledger.accounts SET entries = entries + 1 WHERE card_id = $2 AND member_id = $3
     )
     SELECT * FROM entry`,
    [k.tenantId, k.cardId, k.memberId, e.event, e.amount, e.balanceAfter, e.purchaseCents, null, null, null, e.at],
  );
  return Number(rows[0]!.id);
}

async function recordEvent(
  db: pg.PoolClient,
  tenantId: number,
  type: string,
  data: Record<string, unknown>,
  at: Date,
): Promise<void> {
  const id = randomUUID();
  const envelope = { id, type: `ledger.${type}`, tenant_id: tenantId, occurred_at: at.toISOString(), data };
  // Written as already published: the ledger's relay must never send the baseline's events to
  // any stream (the bench system's consumers would do full-path work for them, and a subject of
  // another system's root would reach that system).
  await db.query('INSERT INTO ledger.outbox (id, subject, payload, published_at) VALUES ($1, $2, $3, $4)', [
    id,
    `bench_baseline.events.ledger.${type}`,
    JSON.stringify(envelope),
    at,
  ]);
}

async function inTransaction<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    const r = await fn(c);
    await c.query('COMMIT');
    return r;
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    c.release();
  }
}

class Refused extends Error {}

/** An earn by member_id without reference: card, member (identity), then credit + journal + outbox in one transaction. */
async function earn(
  pool: pg.Pool,
  f: Fixture,
  kind: 'points' | 'cashback',
  memberId: number,
  purchaseCents: number,
): Promise<DirectOutcome> {
  const cardId = kind === 'points' ? f.pointsCardId : f.cashbackCardId;
  const card = await findCard(pool, f.tenantId, cardId);
  await findMemberById(pool, f.tenantId, memberId);
  const amount =
    kind === 'points'
      ? Math.floor((purchaseCents * POINTS_RATIO) / 100)
      : Math.floor((purchaseCents * CASHBACK_PERCENT + 50) / 100);
  const event = kind === 'points' ? 'staff_added_points' : 'cashback_earned';
  const k = { tenantId: f.tenantId, cardId: card.id, memberId };
  await inTransaction(pool, async (db) => {
    const at = new Date();
    const { rows } = await db.query<{ balance: string }>(
      `INSERT INTO ledger.accounts AS a (card_id, member_id, tenant_id, balance, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
       ON CONFLICT (card_id, member_id) DO UPDATE SET balance = a.balance + EXCLUDED.balance, updated_at = EXCLUDED.updated_at
       RETURNING balance`,
      [k.cardId, k.memberId, k.tenantId, amount, at],
    );
    const balance = Number(rows[0]!.balance);
    const id = await appendJournal(db, k, { event, amount, balanceAfter: balance, purchaseCents, at });
    if (amount > 0)
      await db.query(
        `INSERT INTO ledger.lots (tenant_id, card_id, member_id, journal_id, amount, remaining, pending, available_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $5, false, $6, $6)`,
        [k.tenantId, k.cardId, k.memberId, id, amount, at],
      );
    await recordEvent(
      db,
      f.tenantId,
      kind === 'points' ? 'points_earned' : 'cashback_earned',
      {
        member_id: memberId,
        card_id: card.id,
        transaction_id: id,
        amount,
        purchase_amount: purchaseCents / 100,
        previous_balance: balance - amount,
        new_balance: balance,
        currency: card.currency,
        reference: null,
        event,
      },
      at,
    );
  });
  return 200;
}

/** Gateway -> identity on every member-token request (identity's authenticate: app credentials, then the live session). */
export async function memberOfToken(pool: pg.Pool, f: Fixture, r: Redeemer): Promise<number> {
  const { rows: apps } = await pool.query<{ tenant_id: string; key_hash: Buffer }>(
    `SELECT a.tenant_id, t.sandbox, a.scopes, a.key_hash, a.revoked_at IS NOT NULL AS revoked
       FROM identity.apps a JOIN identity.tenants t ON t.id = a.tenant_id WHERE a.id = $1`,
    [f.app.appId],
  );
  if (!apps[0] || !sha256(f.app.apiKey).equals(apps[0].key_hash)) throw new Error('invalid_credentials');
  const { rows: sessions } = await pool.query<{ id: string; member_id: string }>(
    `SELECT id, member_id FROM identity.member_sessions
      WHERE token_hash = $1 AND tenant_id = $2 AND revoked_at IS NULL AND expires_at > $3`,
    [sha256(r.token), f.tenantId, new Date()],
  );
  if (!sessions[0]) throw new Error('invalid_member_token');
  return Number(sessions[0].member_id);
}

/** The member-token check, then the debit transaction. */
async function redeem(pool: pg.Pool, f: Fixture, r: Redeemer): Promise<DirectOutcome> {
  const memberId = await memberOfToken(pool, f, r);
  const card = await findCard(pool, f.tenantId, f.cashbackCardId);
  const k = { tenantId: f.tenantId, cardId: card.id, memberId };
  try {
    await inTransaction(pool, async (db) => {
      const at = new Date();
      const { rows } = await db.query<{ balance: string }>(
        `UPDATE ledger.accounts SET balance = balance - $3, updated_at = $4
         WHERE card_id = $1 AND member_id = $2 AND balance >= $3 RETURNING balance`,
        [k.cardId, k.memberId, REDEEM_AMOUNT_CENTS, at],
      );
      if (!rows[0]) {
        await findBalance(db, card.id, memberId);
        throw new Refused();
      }
      const balance = Number(rows[0].balance);
      // The spendable lots, soonest-expiring first, each one's remainder lowered until the debit is covered.
      const lots = await db.query<{ id: string; remaining: string }>(
        `SELECT id, remaining FROM ledger.lots WHERE card_id = $1 AND member_id = $2 AND remaining > 0 AND NOT pending
          ORDER BY expires_at, id`,
        [k.cardId, k.memberId],
      );
      let need = REDEEM_AMOUNT_CENTS;
      for (const lot of lots.rows) {
        if (need === 0) break;
        const take = Math.min(Number(lot.remaining), need);
        await db.query('UPDATE ledger.lots SET remaining = remaining - $2 WHERE id = $1', [lot.id, take]);
        need -= take;
      }
      const id = await appendJournal(db, k, {
        event: 'cashback_redeemed',
        amount: -REDEEM_AMOUNT_CENTS,
        balanceAfter: balance,
        purchaseCents: null,
        at,
      });
      await recordEvent(
        db,
        f.tenantId,
        'cashback_redeemed',
        {
          member_id: memberId,
          card_id: card.id,
          transaction_id: id,
          amount: REDEEM_AMOUNT_CENTS / 100,
          previous_balance: (balance + REDEEM_AMOUNT_CENTS) / 100,
          new_balance: balance / 100,
          currency: card.currency,
          reference: null,
          event: 'cashback_redeemed',
        },
        at,
      );
    });
  } catch (err) {
    if (err instanceof Refused) return 422;
    throw err;
  }
  return 200;
}

export interface DirectScenario {
  op: (i: number) => Promise<DirectOutcome>;
  check?: () => Promise<string[]>;
}

export function baselineScenario(
  name: ScenarioName,
  pool: pg.Pool,
  f: Fixture,
  side: 'warmup' | 'baseline',
): DirectScenario {
  const offset = side === 'warmup' ? 7919 : 0;
  const member = (i: number) => f.members[(i + offset) % f.members.length]!;
  switch (name) {
    case 'points_earn':
    case 'points_earn_rules': // compared with a plain earn: what the rules cost
    case 'points_earn_tiers': // the same: what tiers and tier rules cost
      return { op: (i) => earn(pool, f, 'points', member(i), (10 + (i % 90)) * 100) };
    case 'cashback_earn':
      return { op: (i) => earn(pool, f, 'cashback', member(i), 1234 + (i % 100) * 100) };
    case 'points_balance':
      return {
        async op(i) {
          const card = await findCard(pool, f.tenantId, f.pointsCardId);
          const balance = await findBalance(pool, card.id, member(i));
          if (balance === undefined) await findMemberById(pool, f.tenantId, member(i));
          return 200;
        },
      };
    case 'points_history':
      return {
        async op() {
          const card = await findCard(pool, f.tenantId, f.pointsCardId);
          const memberId = f.historyMemberId;
          if ((await findBalance(pool, card.id, memberId)) === undefined)
            await findMemberById(pool, f.tenantId, memberId);
          // The page with the services' own statement (imported: the baseline does not differ from
          // them here). The older page
          // query (ORDER BY id DESC LIMIT 20 on the journal, then the entry count) lets the planner,
          // once statistics exist, walk the primary key backwards past every newer row of other
          // members: 601 ms a page at 50,000 rows, a planner trap rather than the path's cost.
          await pool.query(JOURNAL_PAGE, [card.id, memberId, 20, 0]);
          return 200;
        },
      };
    case 'cashback_redeem':
      return redeemScenario(pool, f, side, f.redeemers.baseline, 'baseline', (r) => redeem(pool, f, r));
  }
}

/**
 * Redemption on a few accounts until they run dry, and afterwards the check that every account
 * holds its start minus exactly the successful redemptions. The warm-up reads balances only, so
 * the measured accounts start full.
 */
export function redeemScenario(
  pool: pg.Pool,
  f: Fixture,
  side: 'warmup' | 'baseline',
  accounts: Redeemer[],
  label: string,
  redeemOne: (r: Redeemer) => Promise<DirectOutcome>,
): DirectScenario {
  if (side === 'warmup')
    return {
      op: async (i) => (await findBalance(pool, f.cashbackCardId, accounts[i % accounts.length]!.memberId), 200),
    };
  const redeemed = accounts.map(() => 0);
  return {
    async op(i) {
      const k = i % accounts.length;
      const outcome = await redeemOne(accounts[k]!);
      if (outcome === 200) redeemed[k]! += 1;
      return outcome;
    },
    async check() {
      const problems: string[] = [];
      for (const [k, a] of accounts.entries()) {
        const balance = await findBalance(pool, f.cashbackCardId, a.memberId);
        const expected = a.startCents - redeemed[k]! * REDEEM_AMOUNT_CENTS;
        if (balance !== expected || balance < 0)
          problems.push(`${label}: member ${a.memberId} holds ${balance} cents, expected ${expected}`);
        const { rows } = await pool.query<{ lots: string }>(
          'SELECT COALESCE(sum(remaining), 0) AS lots FROM ledger.lots WHERE card_id = $1 AND member_id = $2 AND NOT pending',
          [f.cashbackCardId, a.memberId],
        );
        if (Number(rows[0]!.lots) !== balance)
          problems.push(`${label}: member ${a.memberId} holds ${balance} cents but ${rows[0]!.lots} in lots`);
      }
      return problems;
    },
  };
}
