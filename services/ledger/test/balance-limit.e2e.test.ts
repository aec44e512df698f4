import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerOperations, Subjects } from '@loyalty/contracts';
import { createLogger, ServiceClient } from '@loyalty/runtime';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';
import { connectAs } from '../../../test/support/nats.ts';
import { MAX_BALANCE } from '../src/domain/money.ts';
import { cashbackCard, email, journalOf, pointsCard, storedAndJournal, type Api } from './support.ts';

/**
 * The upper bound of a balance (MAX_BALANCE, 10^15 cents or points): balances are seeded near it
 * straight in the database, then credits through the API must stop at it exactly, writing nothing
 * for a refused one, even when many arrive at once.
 */
let sys: TestSystem;
let api: Api;
let tenantId: number;
let points: number;
let cashback: number;
let nc: NatsConnection;
let subjects: Subjects;
const PTS = '/api/v1/loyalty/points';
const CB = '/api/v1/cashback/cashback';

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger'] });
  const t = await sys.tenant();
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
  points = await pointsCard(sys, tenantId);
  cashback = await cashbackCard(sys, tenantId, {
    cashback_percentage: 10,
    cashback_min_amount: 0,
    cashback_max_amount: null,
  });
  nc = await connectAs('admin', { url: sys.env.NATS_URL });
  subjects = new Subjects(sys.env.SUBJECT_ROOT);
});
afterAll(async () => {
  await nc?.close();
  await sys?.stop();
});

/** A member with an account on the card (one earn of 1.00), then credited straight in the database up to `balance`. */
async function memberAt(cardId: number, path: string, balance: number): Promise<number> {
  const r = await api('POST', `${path}/earn`, {
    body: { card_id: cardId, email: email('limit'), member_name: 'Near The Limit', purchase_amount: 1 },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const memberId = r.body.data!.member_id as number;
  // One journal row for the seeded amount keeps the balance equal to the sum of the journal.
  await sys.db.query(
    `INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, created_at)
     SELECT $1, $2, $3, 'referral_bonus', $4::bigint - balance, $4::bigint, now()
       FROM ledger.accounts WHERE card_id = $2 AND member_id = $3`,
    [tenantId, cardId, memberId, balance],
  );
  await sys.db.query(
    'UPDATE ledger.accounts SET balance = $3::bigint, entries = entries + 1 WHERE card_id = $1 AND member_id = $2',
    [cardId, memberId, balance],
  );
  expect((await storedAndJournal(sys, cardId, memberId)).stored).toBe(balance);
  return memberId;
}

const outboxEvents = async () =>
  Number((await sys.db.query<{ n: string }>('SELECT count(*)::text AS n FROM ledger.outbox')).rows[0]!.n);

describe('balance limit', () => {
  it('refuses a points credit past the maximum, writing nothing, and accepts one up to it exactly', async () => {
    const memberId = await memberAt(points, PTS, MAX_BALANCE - 5);
    const journal = await journalOf(sys, points, memberId);
    const events = await outboxEvents();
    const headerSets: Record<string, string>[] = [{}, { 'idempotency-key': `limit-${memberId}` }];
    for (const headers of headerSets) {
      const over = await api('POST', `${PTS}/earn`, {
        body: { card_id: points, member_id: memberId, purchase_amount: 6 },
        headers,
      });
      expect(over.status, JSON.stringify(over.body)).toBe(422);
      expect(over.body.error).toMatchObject({ code: 'balance_limit_exceeded', max_balance: MAX_BALANCE });
    }
    expect(await journalOf(sys, points, memberId)).toEqual(journal);
    expect(await outboxEvents()).toBe(events);

    const upTo = await api('POST', `${PTS}/earn`, {
      body: { card_id: points, member_id: memberId, purchase_amount: 5 },
    });
    expect(upTo.body.data).toMatchObject({ points_earned: 5, new_balance: MAX_BALANCE });
    const balance = await api('GET', `${PTS}/balance?card_id=${points}&member_id=${memberId}`);
    expect(balance.body.data).toMatchObject({ points_balance: 1_000_000_000_000_000 });
    expect(await storedAndJournal(sys, points, memberId)).toEqual({ stored: MAX_BALANCE, journal: MAX_BALANCE });
    // a debit and a refund still work at the limit
    const refund = await api('POST', `${PTS}/refund`, {
      body: { card_id: points, member_id: memberId, refund_amount: 1, points_to_deduct: 1 },
    });
    expect(refund.body.data).toMatchObject({ new_balance: MAX_BALANCE - 1 });
  });

  it('lets no parallel credits pass the maximum together', async () => {
    const memberId = await memberAt(points, PTS, MAX_BALANCE - 50);
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        api('POST', `${PTS}/earn`, { body: { card_id: points, member_id: memberId, purchase_amount: 5 } }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 422)).toHaveLength(10);
    for (const r of results.filter((x) => x.status === 422))
      expect(r.body.error).toMatchObject({ code: 'balance_limit_exceeded' });
    expect(await storedAndJournal(sys, points, memberId)).toEqual({ stored: MAX_BALANCE, journal: MAX_BALANCE });
  });

  it('refuses the largest earn the contract allows when it would pass the maximum', async () => {
    const huge = await pointsCard(sys, tenantId, { points_ratio: 1_000_000 });
    const memberId = await memberAt(huge, PTS, 1_000_000); // the earn of 1.00 at this ratio
    const r = await api('POST', `${PTS}/earn`, {
      body: { card_id: huge, member_id: memberId, purchase_amount: 1_000_000_000 }, // 10^15 points
    });
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.error).toMatchObject({ code: 'balance_limit_exceeded' });
    expect(await storedAndJournal(sys, huge, memberId)).toEqual({ stored: 1_000_000, journal: 1_000_000 });
  });

  it('refuses a cashback credit past the maximum and reports a balance near it exactly', async () => {
    const memberId = await memberAt(cashback, CB, MAX_BALANCE - 99); // 9,999,999,999,999.01
    const over = await api('POST', `${CB}/earn`, {
      body: { card_id: cashback, member_id: memberId, purchase_amount: 10 }, // 1.00 cashback
    });
    expect(over.status, JSON.stringify(over.body)).toBe(422);
    expect(over.body.error).toMatchObject({ code: 'balance_limit_exceeded', max_balance: 10_000_000_000_000 });
    const balance = await api('GET', `${CB}/balance?card_id=${cashback}&member_id=${memberId}`);
    expect(balance.body.data).toMatchObject({ cashback_balance: 9_999_999_999_999.01 });
    const upTo = await api('POST', `${CB}/earn`, {
      body: { card_id: cashback, member_id: memberId, purchase_amount: 9.9 },
    });
    expect(upTo.body.data).toMatchObject({ cashback_earned: 0.99, new_balance: 10_000_000_000_000 });
  });

  it('refuses a points credit of another service past the maximum', async () => {
    const memberId = await memberAt(points, PTS, MAX_BALANCE - 10);
    const client = new ServiceClient(nc, subjects, { timeoutMs: 5_000, log: createLogger('test', 'silent') });
    const credit = (n: number, key: string) =>
      client.call(
        ledgerOperations.creditPoints,
        { request_id: 'test', tenant_id: tenantId, idempotency_key: key },
        { card_id: points, member_id: memberId, points: n, event: 'referral_bonus' },
      );
    await expect(credit(11, `referral:${memberId}:a`)).rejects.toMatchObject({ code: 'balance_limit_exceeded' });
    await expect(credit(Number.MAX_SAFE_INTEGER, `referral:${memberId}:b`)).rejects.toMatchObject({
      code: 'balance_limit_exceeded',
    });
    expect(await credit(10, `referral:${memberId}:c`)).toMatchObject({ new_balance: MAX_BALANCE });
  });
});
