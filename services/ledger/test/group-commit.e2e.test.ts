import { afterAll, beforeAll, expect, it } from 'vitest';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { cashbackCard, email, pointsCard, signedIn, storedAndJournal, type Api } from './support.ts';

/**
 * Group commit (src/posting-batcher.ts) end to end: earns and redemptions without an
 * Idempotency-Key that reach the ledger while a posting statement is in flight share the next
 * statement, and each still gets its own outcome. The ledger runs one statement at a time here, and
 * the test holds it on a row lock, so what arrives meanwhile must queue.
 */
let sys: TestSystem;
let api: Api;
let points: number;
let cashback: number;

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger'], env: { POSTING_STATEMENTS: '1' } });
  const t = await sys.tenant();
  api = apiClient(sys.url, t);
  points = await pointsCard(sys, t.tenantId);
  cashback = await cashbackCard(sys, t.tenantId, { cashback_min_amount: 0, cashback_max_amount: null });
});
afterAll(async () => sys?.stop());

const pointsEarn = (body: Record<string, unknown>) =>
  api('POST', '/api/v1/loyalty/points/earn', { body: { card_id: points, ...body } });

async function member(purchase: number, reference?: string): Promise<{ id: number; transaction: number }> {
  const r = await pointsEarn({ email: email('gc'), purchase_amount: purchase, ...(reference ? { reference } : {}) });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return { id: r.body.data!.member_id as number, transaction: r.body.data!.transaction_id as number };
}

/** Statements made and postings they carried so far (the ledger's histogram). */
async function postingStatements(): Promise<{ statements: number; postings: number }> {
  const text = await (await fetch(`http://127.0.0.1:${sys.services.ledger!.opsPort}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return {
    statements: value('loyalty_ledger_postings_per_statement_count'),
    postings: value('loyalty_ledger_postings_per_statement_sum'),
  };
}

async function until(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

it('shares a statement among the postings that queue behind one in flight, each with its own outcome', async () => {
  const blocker = await member(10);
  const distinct = await Promise.all(Array.from({ length: 6 }, (_, i) => member(10 + i)));
  const twice = await member(40);
  const original = await member(50, `order-${email('ref')}`);
  const originalReference = (
    await sys.db.query<{ reference: string }>('SELECT reference FROM ledger.journal WHERE id = $1', [
      original.transaction,
    ])
  ).rows[0]!.reference;
  const redeemer = await signedIn(api);
  const funded = await api('POST', '/api/v1/cashback/cashback/earn', {
    body: { card_id: cashback, member_id: redeemer.id, purchase_amount: 100 },
  }); // 5.00
  expect(funded.status).toBe(200);

  // Hold the ledger's only posting statement on the blocker's account row.
  const lock = await sys.db.connect();
  try {
    await lock.query('BEGIN');
    await lock.query('SELECT 1 FROM ledger.accounts WHERE card_id = $1 AND member_id = $2 FOR UPDATE', [
      points,
      blocker.id,
    ]);
    const blocked = pointsEarn({ member_id: blocker.id, purchase_amount: 5 });
    await until(
      async () =>
        (
          await sys.db.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          )
        ).rows.length > 0,
    );
    const before = await postingStatements();

    const queued = Promise.all([
      ...distinct.map((m) => pointsEarn({ member_id: m.id, purchase_amount: 7 })),
      pointsEarn({ member_id: twice.id, purchase_amount: 3 }),
      pointsEarn({ member_id: twice.id, purchase_amount: 4 }),
      pointsEarn({ member_id: original.id, purchase_amount: 9, reference: originalReference }),
      api('POST', '/api/v1/cashback/cashback/redeem', {
        body: { card_id: cashback, amount: 2 },
        token: redeemer.token,
      }),
      api('POST', '/api/v1/cashback/cashback/redeem', {
        body: { card_id: cashback, amount: 4 },
        token: redeemer.token,
      }),
    ]);
    await new Promise((r) => setTimeout(r, 500)); // the requests reach the ledger and queue
    await lock.query('COMMIT');
    const [first, replies] = await Promise.all([blocked, queued]);

    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data).toMatchObject({ points_earned: 5, new_balance: 15 });
    distinct.forEach((m, i) => {
      expect(replies[i]!.status, JSON.stringify(replies[i]!.body)).toBe(200);
      expect(replies[i]!.body.data).toMatchObject({ member_id: m.id, points_earned: 7, new_balance: 10 + i + 7 });
    });
    const [three, four, duplicate, redeemed, uncovered] = replies.slice(distinct.length);
    // Two postings on one account: two statements, applied one after the other.
    expect(three!.status).toBe(200);
    expect(four!.status).toBe(200);
    expect([three!.body.data!.new_balance, four!.body.data!.new_balance].sort()).toEqual([43, 47]);
    // The duplicate reference fails the shared statement; retried alone, only it is refused.
    expect(duplicate!.status, JSON.stringify(duplicate!.body)).toBe(409);
    expect(duplicate!.body.error).toMatchObject({
      code: 'duplicate_reference',
      original_transaction_id: original.transaction,
    });
    // Debits: one covered, then one the rest of the balance does not cover (either order is possible).
    expect([redeemed!.status, uncovered!.status].sort()).toEqual([200, 422]);

    const after = await postingStatements();
    expect(after.postings - before.postings).toBe(11); // every queued posting went through a statement of the batcher
    expect(after.statements - before.statements).toBeLessThan(11); // and some of them shared one
  } finally {
    lock.release();
  }

  for (const m of [blocker, ...distinct, twice, original]) {
    const { stored, journal } = await storedAndJournal(sys, points, m.id);
    expect(journal).toBe(stored);
  }
  const { stored, journal } = await storedAndJournal(sys, cashback, redeemer.id);
  expect(journal).toBe(stored);
  expect([100, 300]).toContain(stored); // 5.00 minus 2.00 or minus 4.00, in cents
  // Every posting wrote its event, with its own transaction and balances.
  const { rows } = await sys.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ledger.journal j JOIN ledger.outbox o ON (o.payload -> 'data' ->> 'transaction_id')::bigint = j.id
      WHERE j.card_id = $1 AND (o.payload -> 'data' ->> 'new_balance')::numeric = j.balance_after`,
    [points],
  );
  const { rows: entries } = await sys.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM ledger.journal WHERE card_id = $1',
    [points],
  );
  expect(rows[0]!.n).toBe(entries[0]!.n);
});

it('posts many parallel earns exactly, in fewer statements than earns', async () => {
  const members = await Promise.all(Array.from({ length: 30 }, () => member(20)));
  const before = await postingStatements();
  const replies = await Promise.all(members.map((m) => pointsEarn({ member_id: m.id, purchase_amount: 5 })));
  const after = await postingStatements();
  for (const [i, r] of replies.entries()) {
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ member_id: members[i]!.id, new_balance: 25 });
  }
  expect(new Set(replies.map((r) => r.body.data!.transaction_id)).size).toBe(30);
  expect(after.postings - before.postings).toBe(30);
  expect(after.statements - before.statements).toBeLessThan(30);
});
