import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AppError,
  cashbackOperations,
  identityOperations,
  ledgerAdminOperations,
  ledgerOperations,
  pointsOperations,
  type MemberSummary,
} from '@loyalty/contracts';
import {
  newTenantId,
  operatorMeta,
  publicMeta,
  serviceMeta,
  startService,
  type DataFor,
  type Fake,
  type ServiceRunner,
} from '../../../test/support/service-runner.ts';
import { email, storedAndJournal } from './support.ts';

/**
 * The ledger alone (test/support/service-runner.ts): its group commit and the operations it
 * offers the claims and referrals services, over real Postgres and NATS, with identity's member
 * directory faked. The ledger runs one posting statement at a time here (POSTING_STATEMENTS=1),
 * so what reaches it while a test holds that statement on a row lock must queue.
 */
let ledger: ServiceRunner<'ledger'>;
let resolveMember: Fake<typeof identityOperations.resolveMember>;
let tenantId: number;
let otherTenantId: number;
let points: number; // points card, ratio 1
let cashback: number;

const p = pointsOperations;
const c = cashbackOperations;
const a = ledgerAdminOperations;
const l = ledgerOperations;

/** Identity's members as the ledger sees them: per tenant, found by id, email or phone, created on request. */
const members = new Map<number, { tenant: number; summary: MemberSummary; email?: string; phone?: string }>();
let lastMemberId = 0;

beforeAll(async () => {
  ledger = await startService('ledger', { env: { POSTING_STATEMENTS: '1' } });
  // Identity says every tenant the operator names exists (the ledger asks before making a card).
  await ledger.fake(identityOperations.getTenant, (_d, meta) => ({ tenant: { id: meta.tenant_id, sandbox: false } }));
  resolveMember = await ledger.fake(identityOperations.resolveMember, (d, meta) => {
    const mine = [...members.values()].filter((m) => m.tenant === meta.tenant_id);
    const found =
      d.member_id !== undefined
        ? mine.find((m) => m.summary.id === d.member_id)
        : mine.find(
            (m) => (d.email !== undefined && m.email === d.email) || (d.phone !== undefined && m.phone === d.phone),
          );
    if (found) return { member: found.summary, created: false };
    if (d.member_id !== undefined || !d.create_if_missing) throw new AppError('member_not_found');
    const summary = newMember(meta.tenant_id, d);
    return { member: summary, created: true };
  });
  tenantId = newTenantId();
  otherTenantId = newTenantId();
  points = await pointsCard(tenantId);
  cashback = (
    await ledger.request(a['admin.card.create'], operatorMeta(), {
      tenant_id: tenantId,
      name: 'Cashback card',
      reward_system: 'cashback',
      currency: 'EUR',
      cashback_config: {
        cashback_percentage: 5,
        cashback_min_amount: 0,
        cashback_max_amount: null,
        allows_pin_redemption: false,
      },
    })
  ).card.id;
});
afterAll(async () => ledger?.stop());

function newMember(tenant: number, d: { email?: string; phone?: string; name?: string } = {}): MemberSummary {
  lastMemberId += 1;
  const summary: MemberSummary = {
    id: lastMemberId,
    name: d.name ?? `Member ${lastMemberId}`,
    email: d.email ? '***' : null,
    phone: d.phone ? '***' : null,
    has_email: d.email !== undefined,
    is_active: true,
  };
  members.set(summary.id, { tenant, summary, email: d.email, phone: d.phone });
  return summary;
}

async function pointsCard(tenant: number, extra: Record<string, unknown> = {}): Promise<number> {
  const { card } = await ledger.request(a['admin.card.create'], operatorMeta(), {
    tenant_id: tenant,
    name: 'Points card',
    reward_system: 'points',
    points_ratio: 1,
    ...extra,
  });
  return card.id;
}

async function reward(cardId: number, pointsCost: number, name: string): Promise<number> {
  const r = await ledger.request(a['admin.reward.create'], operatorMeta(), {
    tenant_id: tenantId,
    card_id: cardId,
    name,
    points_cost: pointsCost,
  });
  return r.reward.id;
}

const pointsEarn = (data: { member_id?: number; email?: string; purchase_amount: number; reference?: string }) =>
  ledger.call(p['points.earn'], publicMeta(tenantId), { card_id: points, ...data });

async function balanceOf(memberId: number): Promise<number> {
  const r = await ledger.request(p['points.balance'], publicMeta(tenantId), { card_id: points, member_id: memberId });
  return r.points_balance;
}

describe('group commit', () => {
  async function member(purchase: number, reference?: string): Promise<{ id: number; transaction: number }> {
    const r = await pointsEarn({ email: email('gc'), purchase_amount: purchase, ...(reference ? { reference } : {}) });
    if (!r.ok) throw new Error(JSON.stringify(r));
    return { id: r.data.member_id, transaction: r.data.transaction_id };
  }

  /** Statements made and postings they carried so far (the ledger's histogram). */
  async function postingStatements(): Promise<{ statements: number; postings: number }> {
    const text = await (await fetch(`http://127.0.0.1:${ledger.service.opsPort}/metrics`)).text();
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
      await ledger.db.query<{ reference: string }>('SELECT reference FROM ledger.journal WHERE id = $1', [
        original.transaction,
      ])
    ).rows[0]!.reference;
    const redeemer = newMember(tenantId, { email: email('redeemer') });
    const funded = await ledger.call(c['cashback.earn'], publicMeta(tenantId), {
      card_id: cashback,
      member_id: redeemer.id,
      purchase_amount: 100,
    }); // 5.00
    expect(funded.ok, JSON.stringify(funded)).toBe(true);
    // The member token's member, as the gateway puts it in the meta.
    const redeem = (amount: number) =>
      ledger.call(c['cashback.redeem'], publicMeta(tenantId, { member_id: redeemer.id }), {
        card_id: cashback,
        amount,
      });

    // Hold the ledger's only posting statement on the blocker's account row.
    const lock = await ledger.db.connect();
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
            await ledger.db.query(
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
        redeem(2),
        redeem(4),
      ]);
      await new Promise((r) => setTimeout(r, 500)); // the requests reach the ledger and queue
      await lock.query('COMMIT');
      const [first, replies] = await Promise.all([blocked, queued]);

      expect(first, JSON.stringify(first)).toMatchObject({ ok: true, data: { points_earned: 5, new_balance: 15 } });
      distinct.forEach((m, i) => {
        expect(replies[i], JSON.stringify(replies[i])).toMatchObject({
          ok: true,
          data: { member_id: m.id, points_earned: 7, new_balance: 10 + i + 7 },
        });
      });
      const [three, four, duplicate, redeemed, uncovered] = replies.slice(distinct.length);
      // Two postings on one account: two statements, applied one after the other.
      if (!three!.ok || !four!.ok) throw new Error(JSON.stringify({ three, four }));
      expect([three!.data.new_balance, four!.data.new_balance].sort()).toEqual([43, 47]);
      // The duplicate reference fails the shared statement; retried alone, only it is refused.
      expect(duplicate, JSON.stringify(duplicate)).toMatchObject({
        ok: false,
        error: { code: 'duplicate_reference', original_transaction_id: original.transaction },
      });
      // Debits: one covered, then one the rest of the balance does not cover (either order is possible).
      expect([redeemed!.ok, uncovered!.ok].sort()).toEqual([false, true]);
      const refused = [redeemed!, uncovered!].find((r) => !r.ok);
      expect(refused).toMatchObject({ ok: false, error: { code: 'insufficient_balance' } });

      const after = await postingStatements();
      expect(after.postings - before.postings).toBe(11); // every queued posting went through a statement of the batcher
      expect(after.statements - before.statements).toBeLessThan(11); // and some of them shared one
    } finally {
      lock.release();
    }

    for (const m of [blocker, ...distinct, twice, original]) {
      const { stored, journal } = await storedAndJournal(ledger, points, m.id);
      expect(journal).toBe(stored);
    }
    const { stored, journal } = await storedAndJournal(ledger, cashback, redeemer.id);
    expect(journal).toBe(stored);
    expect([100, 300]).toContain(stored); // 5.00 minus 2.00 or minus 4.00, in cents
    // Every posting wrote its event, with its own transaction and balances.
    const { rows } = await ledger.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ledger.journal j JOIN ledger.outbox o ON (o.payload -> 'data' ->> 'transaction_id')::bigint = j.id
        WHERE j.card_id = $1 AND (o.payload -> 'data' ->> 'new_balance')::numeric = j.balance_after`,
      [points],
    );
    const { rows: entries } = await ledger.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM ledger.journal WHERE card_id = $1',
      [points],
    );
    expect(rows[0]!.n).toBe(entries[0]!.n);
  });

  it('posts many parallel earns exactly, in fewer statements than earns', async () => {
    const many = await Promise.all(Array.from({ length: 30 }, () => member(20)));
    const before = await postingStatements();
    const replies = await Promise.all(many.map((m) => pointsEarn({ member_id: m.id, purchase_amount: 5 })));
    const after = await postingStatements();
    const ids = replies.map((r, i) => {
      if (!r.ok) throw new Error(JSON.stringify(r));
      expect(r.data).toMatchObject({ member_id: many[i]!.id, new_balance: 25 });
      return r.data.transaction_id;
    });
    expect(new Set(ids).size).toBe(30);
    expect(after.postings - before.postings).toBe(30);
    expect(after.statements - before.statements).toBeLessThan(30);
  });
});

describe('operations for other services', () => {
  it('answers card and reward summaries within the tenant', async () => {
    const card = await pointsCard(tenantId, {
      referrer_bonus: 100,
      referee_bonus: 50,
      referral_bonus_on_first_purchase: true,
      claim_lifetime_hours: 2,
    });
    const tea = await reward(card, 30, 'Tea');
    expect(await ledger.request(l.getCard, serviceMeta(tenantId), { card_id: card })).toEqual({
      card: {
        id: card,
        name: 'Points card',
        reward_system: 'points',
        referrer_bonus: 100,
        referee_bonus: 50,
        referral_bonus_on_first_purchase: true,
        claim_lifetime_hours: 2,
      },
    });
    expect(await ledger.request(l.getReward, serviceMeta(tenantId), { card_id: card, reward_id: tea })).toEqual({
      reward: { id: tea, card_id: card, name: 'Tea', points_cost: 30, active: true },
    });
    await expect(
      ledger.request(l.getReward, serviceMeta(tenantId), { card_id: points, reward_id: tea }),
    ).rejects.toMatchObject({ code: 'reward_not_found' });
    await expect(ledger.request(l.getCard, serviceMeta(otherTenantId), { card_id: card })).rejects.toMatchObject({
      code: 'card_not_found',
    });
  });

  it('debits and credits points under a deterministic key, replaying a retried step', async () => {
    const earned = await ledger.request(p['points.earn'], publicMeta(tenantId), {
      card_id: points,
      phone: '+19990000001',
      purchase_amount: 100,
    });
    const memberId = earned.member_id;
    const debit = { card_id: points, member_id: memberId, points: 60, event: 'reward_claimed' as const };
    const move = (
      op: typeof l.debitPoints | typeof l.creditPoints,
      key: string | undefined,
      data: DataFor<typeof l.debitPoints> = debit,
    ) => ledger.request(op, serviceMeta(tenantId, key === undefined ? {} : { idempotency_key: key }), data);
    await expect(move(l.debitPoints, undefined)).rejects.toMatchObject({ code: 'validation_error' });
    const first = await move(l.debitPoints, 'claim:1');
    expect(first).toEqual({ transaction_id: expect.any(Number), points: 60, previous_balance: 100, new_balance: 40 });
    expect(await move(l.debitPoints, 'claim:1')).toEqual(first);
    // refused without touching the balance; the same key can succeed later
    await expect(move(l.debitPoints, 'claim:2')).rejects.toMatchObject({ code: 'insufficient_points' });
    expect(await balanceOf(memberId)).toBe(40);
    const bonus = await move(l.creditPoints, 'referral:1:referrer', { ...debit, points: 25, event: 'referral_bonus' });
    expect(bonus).toMatchObject({ points: 25, previous_balance: 40, new_balance: 65 });
    expect(await move(l.debitPoints, 'claim:2')).toMatchObject({ new_balance: 5 });
    // an API client's Idempotency-Key (the gateway puts it in the meta as it is) never collides with a service's key
    const refund = await ledger.call(p['points.refund'], publicMeta(tenantId, { idempotency_key: 'claim:1' }), {
      card_id: points,
      member_id: memberId,
      refund_amount: 1,
    });
    expect(refund.ok, JSON.stringify(refund)).toBe(true);
    const h = await ledger.request(p['points.history'], publicMeta(tenantId), { card_id: points, member_id: memberId });
    expect(h.transactions.map((t) => [t.points, t.event])).toEqual([
      [-1, 'points_refunded'],
      [-60, 'reward_claimed'],
      [25, 'referral_bonus'],
      [-60, 'reward_claimed'],
      [100, 'staff_added_points'],
    ]);
    await expect(
      move(l.creditPoints, 'x', { ...debit, card_id: cashback, event: 'referral_bonus' }),
    ).rejects.toMatchObject({ code: 'wrong_card_type' });
    // The earn by phone asked identity for the tenant's member, to be created when missing.
    expect(resolveMember.calls.filter((x) => x.data.phone === '+19990000001')).toEqual([
      {
        meta: expect.objectContaining({ tenant_id: tenantId }),
        data: expect.objectContaining({ create_if_missing: true }),
      },
    ]);
  });
});
