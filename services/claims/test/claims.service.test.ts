import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AppError,
  claimsOperations,
  identityOperations,
  ledgerOperations,
  staffOperations,
  type CardSummary,
  type MemberSummary,
  type RewardSummary,
} from '@loyalty/contracts';
import {
  newTenantId,
  publicMeta,
  startService,
  type Fake,
  type ServiceRunner,
} from '../../../test/support/service-runner.ts';

/**
 * The claims service alone (test/support/service-runner.ts): the approval saga, its crash safety,
 * its races and the expiry sweeper, over real Postgres and NATS. The ledger and identity are
 * fakes: the fake ledger keeps balances in memory and debits at most once per idempotency key (as
 * the real one does), so a replayed saga step is visible in what it received. Like the real one,
 * it holds a claim's points at creation (the spendable balance drops), captures the hold on the
 * debit under the same key and gives it back on release.
 */
let claims: ServiceRunner<'claims'>;
let debitPoints: Fake<typeof ledgerOperations.debitPoints>;
let releaseHold: Fake<typeof ledgerOperations.releaseHold>;
let tenantId: number;
let card: number;
let reward: number; // costs 100 points
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const ops = claimsOperations;

// ---- the fake ledger: cards, rewards, balances, debits once per key ----------------------------------

const cards = new Map<number, { tenant: number; summary: CardSummary }>();
const rewards = new Map<number, RewardSummary>();
const balances = new Map<string, number>();
/** Debits applied, by idempotency key: a repeated key answers the first reply and moves nothing. */
const applied = new Map<
  string,
  { transaction_id: number; points: number; previous_balance: number; new_balance: number }
>();
/** Holds by key (claim:<id>): what the fake ledger reserved of the spendable balance. */
const holds = new Map<
  string,
  { card: number; member: number; points: number; status: 'held' | 'captured' | 'released' }
>();
let lastId = 0;
/** While set, the fake ledger answers releases with 503 (it is away). */
let ledgerAway = false;
/** While set, the fake ledger waits for it before placing a hold (a slow ledger). */
let holdGate: Promise<void> | undefined;

function createCard(lifetimeHours = 72): number {
  lastId += 1;
  cards.set(lastId, {
    tenant: tenantId,
    summary: {
      id: lastId,
      name: `Points ${lastId}`,
      reward_system: 'points',
      referrer_bonus: 0,
      referee_bonus: 0,
      referral_bonus_on_first_purchase: false,
      claim_lifetime_hours: lifetimeHours,
    },
  });
  return lastId;
}

function createReward(cardId: number, pointsCost: number, name: string): number {
  lastId += 1;
  rewards.set(lastId, { id: lastId, card_id: cardId, name, points_cost: pointsCost, active: true });
  return lastId;
}

const account = (cardId: number, memberId: number) => `${cardId}:${memberId}`;
const balance = (cardId: number, memberId: number) => balances.get(account(cardId, memberId)) ?? 0;
const earn = (cardId: number, memberId: number, points: number) =>
  balances.set(account(cardId, memberId), balance(cardId, memberId) + points);
/** The ledger debits the saga asked for, for one claim (every attempt, replays included). */
const debitsOf = (claimId: number) => debitPoints.calls.filter((c) => c.data.reference === `claim:${claimId}`);

// ---- the fake identity: members and claim codes --------------------------------------------------------

const members = new Map<string, MemberSummary>();
const codes = new Map<string, { code: string; memberId: number; context: Record<string, unknown> }>();

let n = 0;
/** A member with `points` on the card. */
function member(points = 500, cardId = card): { email: string; id: number } {
  n += 1;
  const email = `claimer${n}@example.com`;
  lastId += 1;
  members.set(email, {
    id: lastId,
    name: `Member ${n}`,
    email: 'c***@example.com',
    phone: null,
    has_email: true,
    is_active: true,
  });
  earn(cardId, lastId, points);
  return { email, id: lastId };
}

beforeAll(async () => {
  // The sweeper's own timer is kept out of the way; tests sweep when they mean to.
  claims = await startService('claims', { env: { CLAIM_SWEEP_INTERVAL_MS: String(HOUR) } });
  tenantId = newTenantId();
  const mine = <T extends { tenant: number }>(found: T | undefined, tenant: number) =>
    found && found.tenant === tenant ? found : undefined;
  await claims.fake(ledgerOperations.getCard, (d, meta) => {
    const found = mine(cards.get(d.card_id), meta.tenant_id);
    if (!found) throw new AppError('card_not_found');
    return { card: found.summary };
  });
  await claims.fake(ledgerOperations.getReward, (d, meta) => {
    const found = rewards.get(d.reward_id);
    if (!mine(cards.get(d.card_id), meta.tenant_id) || !found || found.card_id !== d.card_id)
      throw new AppError('reward_not_found');
    return { reward: found };
  });
  debitPoints = await claims.fake(ledgerOperations.debitPoints, (d, meta) => {
    if (!meta.idempotency_key) throw new AppError('validation_error', 'debit_points needs an idempotency key');
    const replay = applied.get(meta.idempotency_key);
    if (replay) return replay;
    const hold = holds.get(meta.idempotency_key);
    if (hold?.status === 'held') {
      // Capture: the points left the spendable balance when the hold was placed.
      hold.status = 'captured';
      lastId += 1;
      const now = balance(d.card_id, d.member_id);
      const reply = { transaction_id: lastId, points: d.points, previous_balance: now, new_balance: now };
      applied.set(meta.idempotency_key, reply);
      return reply;
    }
    const previous = balance(d.card_id, d.member_id);
    if (previous < d.points)
      throw new AppError('insufficient_points', undefined, { points_balance: previous, points_required: d.points });
    balances.set(account(d.card_id, d.member_id), previous - d.points);
    lastId += 1;
    const reply = {
      transaction_id: lastId,
      points: d.points,
      previous_balance: previous,
      new_balance: previous - d.points,
    };
    applied.set(meta.idempotency_key, reply);
    return reply;
  });
  await claims.fake(ledgerOperations.holdPoints, async (d, meta) => {
    await holdGate;
    const key = meta.idempotency_key!;
    const existing = holds.get(key);
    const spendable = balance(d.card_id, d.member_id);
    if (existing) return { hold_id: 1, status: existing.status, points: existing.points, new_balance: spendable };
    if (spendable < d.points)
      throw new AppError('insufficient_points', undefined, { points_balance: spendable, points_required: d.points });
    balances.set(account(d.card_id, d.member_id), spendable - d.points);
    holds.set(key, { card: d.card_id, member: d.member_id, points: d.points, status: 'held' });
    return { hold_id: 1, status: 'held' as const, points: d.points, new_balance: spendable - d.points };
  });
  releaseHold = await claims.fake(ledgerOperations.releaseHold, (_d, meta) => {
    if (ledgerAway) throw new AppError('service_unavailable');
    const hold = holds.get(meta.idempotency_key!);
    if (!hold) return { released: false, status: null };
    if (hold.status !== 'held') return { released: false, status: hold.status };
    hold.status = 'released';
    earn(hold.card, hold.member, hold.points);
    return { released: true, status: 'released' as const };
  });
  await claims.fake(identityOperations.issueClaimOtp, (d, meta) => {
    const found = members.get(d.member_email);
    if (!found) throw new AppError('member_not_found');
    const code = String(100_000 + ((found.id * 7919 + codes.size) % 900_000));
    codes.set(`${meta.tenant_id}:${d.member_email}`, { code, memberId: found.id, context: d.context });
    return {
      member_id: found.id,
      expires_at: new Date(claims.clock.now().getTime() + 10 * MINUTE).toISOString(),
      expires_in_minutes: 10,
      otp_code: code,
    };
  });
  await claims.fake(identityOperations.verifyClaimOtp, (d, meta) => {
    const key = `${meta.tenant_id}:${d.member_email}`;
    const issued = codes.get(key);
    if (!issued || issued.code !== d.code) throw new AppError('invalid_verification_code');
    codes.delete(key);
    return { member_id: issued.memberId, context: issued.context };
  });
  await claims.fake(identityOperations.getMembers, (d) => ({
    members: [...members.values()].filter((m) => d.ids.includes(m.id)),
  }));
  await claims.fake(ledgerOperations.pointsBalances, (d) => ({
    balances: d.accounts.map((a) => ({ ...a, points_balance: balance(a.card_id, a.member_id) })),
  }));
  card = createCard();
  reward = createReward(card, 100, 'Free coffee');
});
afterAll(async () => claims?.stop());

// ---- claim helpers -----------------------------------------------------------------------------------

/** A pending claim request of the member: the code through request-otp, then create, as the gateway sends them. */
async function claim(m: { email: string }, cardId = card, rewardId = reward): Promise<number> {
  const issued = await claims.request(ops['claims.request_otp'], publicMeta(tenantId), {
    member_email: m.email,
    card_id: cardId,
    reward_id: rewardId,
  });
  const created = await claims.request(ops['claims.create'], publicMeta(tenantId), {
    member_email: m.email,
    card_id: cardId,
    reward_id: rewardId,
    verification_code: issued.otp_code!,
  });
  return created.claim_request.id;
}

const getClaim = async (id: number) =>
  (await claims.request(ops['claims.get'], publicMeta(tenantId), { request_id: id })).claim_request;
const approve = (id: number) => claims.call(ops['claims.approve'], publicMeta(tenantId), { request_id: id });
const reject = (id: number) => claims.call(ops['claims.reject'], publicMeta(tenantId), { request_id: id });

async function outboxEvents(type: string, claimId: number): Promise<unknown[]> {
  const { rows } = await claims.db.query<{ payload: unknown }>(
    `SELECT payload FROM claims.outbox WHERE payload->>'type' = $1 AND (payload->'data'->>'claim_request_id')::bigint = $2`,
    [`claims.${type}`, claimId],
  );
  return rows.map((r) => r.payload);
}

const crashAfterDebit = () => {
  throw new Error('simulated crash after the ledger debit');
};

describe('approve', () => {
  it('debits through the ledger under the key claim:<id>', async () => {
    const m = member(250);
    const id = await claim(m);
    const r = await approve(id);
    expect(r).toMatchObject({ ok: true, data: { claim_request: { id, status: 'approved', points_deducted: 100 } } });
    expect(debitsOf(id)).toEqual([
      {
        meta: expect.objectContaining({ tenant_id: tenantId, idempotency_key: `claim:${id}` }),
        data: expect.objectContaining({ card_id: card, member_id: m.id, points: 100, event: 'reward_claimed' }),
      },
    ]);
    expect(balance(card, m.id)).toBe(150);
  });

  it('refuses to create a request the spendable balance cannot cover: 422 and no request', async () => {
    const m = member(60);
    const issued = await claims.request(ops['claims.request_otp'], publicMeta(tenantId), {
      member_email: m.email,
      card_id: card,
      reward_id: reward,
    });
    const r = await claims.call(ops['claims.create'], publicMeta(tenantId), {
      member_email: m.email,
      card_id: card,
      reward_id: reward,
      verification_code: issued.otp_code!,
    });
    expect(r).toMatchObject({
      ok: false,
      error: { code: 'insufficient_points', points_balance: 60, points_required: 100 },
    });
    const { rows } = await claims.db.query('SELECT id FROM claims.claim_requests WHERE member_id = $1', [m.id]);
    expect(rows).toEqual([]);
    expect(balance(card, m.id)).toBe(60);
  });

  it('answers a retry that arrives while the first creation is still running 409 in progress, then replays it: one request, one hold', async () => {
    const m = member(150); // enough for one claim only: a second hold would be refused
    const issued = await claims.request(ops['claims.request_otp'], publicMeta(tenantId), {
      member_email: m.email,
      card_id: card,
      reward_id: reward,
    });
    const meta = publicMeta(tenantId, { idempotency_key: `create-${m.id}` });
    const data = { member_email: m.email, card_id: card, reward_id: reward, verification_code: issued.otp_code! };
    let open!: () => void;
    holdGate = new Promise<void>((resolve) => (open = resolve));
    try {
      const first = claims.call(ops['claims.create'], meta, data);
      // The retry (same key) once the first has written its request and waits on the ledger's hold.
      const holding = async () =>
        (await claims.db.query('SELECT status FROM claims.claim_requests WHERE member_id = $1', [m.id])).rows;
      await expect.poll(holding, { timeout: 5000 }).toEqual([{ status: 'holding' }]);
      const retry = await claims.call(ops['claims.create'], { ...meta, request_id: `retry-${m.id}` }, data);
      expect(retry).toMatchObject({ ok: false, error: { code: 'idempotency_in_progress' } });
      open();
      const created = await first;
      expect(created).toMatchObject({ ok: true, data: { claim_request: { status: 'pending' } } });
      const again = await claims.call(ops['claims.create'], { ...meta, request_id: `again-${m.id}` }, data);
      expect(again).toMatchObject({ ok: true, data: created.ok ? created.data : {} });
    } finally {
      open();
      holdGate = undefined;
    }
    const { rows } = await claims.db.query('SELECT status FROM claims.claim_requests WHERE member_id = $1', [m.id]);
    expect(rows).toEqual([{ status: 'pending' }]);
    expect(balance(card, m.id)).toBe(50);
  });

  it('forgets the key of a creation that failed, so a retry with the same key runs again', async () => {
    const m = member(60);
    const issued = await claims.request(ops['claims.request_otp'], publicMeta(tenantId), {
      member_email: m.email,
      card_id: card,
      reward_id: reward,
    });
    const meta = publicMeta(tenantId, { idempotency_key: `short-${m.id}` });
    const data = { member_email: m.email, card_id: card, reward_id: reward, verification_code: issued.otp_code! };
    expect(await claims.call(ops['claims.create'], meta, data)).toMatchObject({
      ok: false,
      error: { code: 'insufficient_points' },
    });
    const { rows } = await claims.db.query(
      'SELECT key FROM claims.idempotency_keys WHERE tenant_id = $1 AND key = $2',
      [tenantId, meta.idempotency_key],
    );
    expect(rows).toEqual([]);
  });

  it('holds the points at creation: the approval captures them, the member cannot spend them meanwhile', async () => {
    const m = member(250);
    const id = await claim(m);
    expect(holds.get(`claim:${id}`)).toMatchObject({ points: 100, status: 'held' });
    expect(balance(card, m.id)).toBe(150);
    expect(await approve(id)).toMatchObject({ ok: true });
    expect(holds.get(`claim:${id}`)!.status).toBe('captured');
    expect(balance(card, m.id)).toBe(150);
    const { rows } = await claims.db.query('SELECT hold_status FROM claims.claim_requests WHERE id = $1', [id]);
    expect(rows[0]).toEqual({ hold_status: 'captured' });
  });

  it('answers insufficient_points and leaves the request pending when its hold is gone; it can be approved once the points are there', async () => {
    const m = member(160);
    const id = await claim(m);
    // The ledger released the hold by itself (it outlived its expiry) and the member spent the points.
    holds.get(`claim:${id}`)!.status = 'released';
    balances.set(account(card, m.id), 60);
    const r = await approve(id);
    expect(r).toMatchObject({ ok: false, error: { code: 'insufficient_points' } });
    expect(await getClaim(id)).toMatchObject({ status: 'pending', points_deducted: null, approved_at: null });
    expect(balance(card, m.id)).toBe(60);
    earn(card, m.id, 40);
    const ok = await approve(id);
    expect(ok.ok, JSON.stringify(ok)).toBe(true);
    expect(balance(card, m.id)).toBe(0);
    // Both attempts asked for the same debit, under the same key.
    expect(debitsOf(id).map((c) => c.meta.idempotency_key)).toEqual([`claim:${id}`, `claim:${id}`]);
  });

  it('survives a crash between the ledger debit and the status change: the retry completes without a second debit', async () => {
    const m = member(500);
    const id = await claim(m);
    let crashes = 0;
    await claims.restart({
      faults: {
        afterLedgerDebit: () => {
          crashes++;
          crashAfterDebit();
        },
      },
    });
    const r = await approve(id);
    expect(r).toMatchObject({ ok: false, error: { code: 'internal_error' } });
    await claims.restart();
    expect(crashes).toBe(1);
    // The debit happened; the request is held by the unfinished approval, so reject cannot take it.
    expect(balance(card, m.id)).toBe(400);
    // Clients see the request being approved as pending (approving is internal).
    expect((await getClaim(id)).status).toBe('pending');
    const pending = await claims.request(ops['claims.list'], publicMeta(tenantId), {
      card_id: card,
      status: 'pending',
    });
    expect(pending.claim_requests.find((x) => x.id === id)?.status).toBe('pending');
    const rej = await reject(id);
    expect(rej).toMatchObject({
      ok: false,
      error: {
        code: 'claim_request_not_pending',
        current_status: 'pending',
        message: 'An approval of this claim request is in progress.',
      },
    });
    // The retry replays the debit (same claim:<id> key) and finishes.
    const retry = await approve(id);
    expect(retry).toMatchObject({
      ok: true,
      data: { claim_request: { id, status: 'approved', points_deducted: 100 } },
    });
    expect(balance(card, m.id)).toBe(400);
    expect(debitsOf(id).map((c) => c.meta.idempotency_key)).toEqual([`claim:${id}`, `claim:${id}`]);
    // One capture of the hold (the points left the spendable balance when the claim was made).
    expect(applied.get(`claim:${id}`)).toMatchObject({ previous_balance: 400, new_balance: 400 });
    expect(holds.get(`claim:${id}`)!.status).toBe('captured');
    expect(await outboxEvents('claim_approved', id)).toHaveLength(1);
  });

  it('finishes an approval left half-done even when nobody retries: the sweeper resumes it', async () => {
    const m = member(500);
    const id = await claim(m);
    await claims.restart({ faults: { afterLedgerDebit: crashAfterDebit } });
    expect((await approve(id)).ok).toBe(false);
    await claims.restart();
    expect((await claims.service.hooks.sweep()).resumed).toBe(0); // too recent: it may still be running
    claims.clock.advance(2 * MINUTE);
    const swept = await claims.service.hooks.sweep();
    expect(swept.resumed).toBeGreaterThanOrEqual(1);
    expect(await getClaim(id)).toMatchObject({ status: 'approved', points_deducted: 100 });
    expect(balance(card, m.id)).toBe(400);
    expect(debitsOf(id).map((c) => c.meta.idempotency_key)).toEqual([`claim:${id}`, `claim:${id}`]);
  });

  it('audits a decision with the one who made it, also when the sweeper finishes it', async () => {
    const auditOf = async (id: number) => {
      const { rows } = await claims.db.query<{ payload: { data: Record<string, unknown> } }>(
        `SELECT payload FROM claims.outbox WHERE payload->>'type' = 'claims.audit_recorded'
            AND (payload->'data'->'target'->>'claim_request_id')::bigint = $1`,
        [id],
      );
      return rows.map((r) => r.payload.data);
    };
    const staffMeta = {
      request_id: 'req-staff-approve',
      tenant_id: tenantId,
      staff: { id: 9, role: 'staff' as const, email: 'tom@example.com' },
      session_id: 4,
    };
    const m = member(500);
    const id = await claim(m);
    await claims.restart({ faults: { afterLedgerDebit: crashAfterDebit } });
    expect((await claims.call(staffOperations['staff.claims.approve'], staffMeta, { request_id: id })).ok).toBe(false);
    expect(await auditOf(id)).toEqual([]); // not approved yet: nothing audited
    await claims.restart();
    claims.clock.advance(2 * MINUTE);
    await claims.service.hooks.sweep();
    expect(await auditOf(id)).toEqual([
      expect.objectContaining({
        actor: { type: 'staff', id: 9, email: 'tom@example.com', role: 'staff' },
        action: 'claim.approved',
        target: { claim_request_id: id, member_id: m.id, card_id: card, reward_id: reward },
        amounts: { points: -100 },
      }),
    ]);
    // Through the merchant API the actor is the app; the staff queue answers with the member's points.
    const other = await claim(member(500));
    const rejected = await claims.request(staffOperations['staff.claims.reject'], staffMeta, {
      request_id: other,
      note: 'Sold out',
    });
    expect(rejected.claim_request).toMatchObject({ status: 'rejected', member_points_balance: 500 });
    expect(await auditOf(other)).toEqual([
      expect.objectContaining({ action: 'claim.rejected', details: { reward_name: 'Free coffee', note: 'Sold out' } }),
    ]);
    const third = await claim(member(500));
    expect((await approve(third)).ok).toBe(true);
    expect(await auditOf(third)).toEqual([expect.objectContaining({ actor: { type: 'app', id: 'app_test' } })]);
  });

  it('lets exactly one of a concurrent approve and reject win', async () => {
    const claimers = Array.from({ length: 6 }, () => member(500));
    const ids = await Promise.all(claimers.map((m) => claim(m)));
    const outcomes = await Promise.all(
      ids.map(async (id, i) => {
        const [a, r] =
          i % 2 === 0
            ? await Promise.all([approve(id), reject(id)])
            : (await Promise.all([reject(id), approve(id)])).reverse();
        return { id, a: a!, r: r! };
      }),
    );
    for (const [i, { id, a, r }] of outcomes.entries()) {
      expect([a.ok, r.ok].sort(), JSON.stringify({ a, r })).toEqual([false, true]);
      const final = await getClaim(id);
      const points = balance(card, claimers[i]!.id);
      if (a.ok) {
        expect(final.status).toBe('approved');
        expect(r).toMatchObject({ ok: false, error: { code: 'claim_request_not_pending' } });
        expect(['pending', 'approved']).toContain(!r.ok && r.error.current_status);
        expect(points).toBe(400);
      } else {
        expect(final.status).toBe('rejected');
        expect(a).toMatchObject({
          ok: false,
          error: { code: 'claim_request_not_pending', current_status: 'rejected' },
        });
        expect(points).toBe(500);
        expect(debitsOf(id)).toEqual([]);
      }
    }
  });

  it('lets exactly one of three concurrent approvals deduct', async () => {
    const m = member(500);
    const id = await claim(m);
    const results = await Promise.all([approve(id), approve(id), approve(id)]);
    expect(results.filter((r) => r.ok)).toHaveLength(1);
    expect(
      results.filter((r) => !r.ok && r.error.code === 'claim_request_not_pending'),
      JSON.stringify(results),
    ).toHaveLength(2);
    expect(balance(card, m.id)).toBe(400);
    expect(new Set(debitsOf(id).map((c) => c.meta.idempotency_key))).toEqual(new Set([`claim:${id}`]));
  });
});

describe('holds', () => {
  it('counts the pending requests of all tenants in loyalty_claims_pending', async () => {
    const pending = async () => {
      const text = await (await fetch(`http://127.0.0.1:${claims.service.opsPort}/metrics`)).text();
      return Number(/^loyalty_claims_pending\{[^}]*\} (\d+)$/m.exec(text)?.[1]);
    };
    const { rows } = await claims.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM claims.claim_requests WHERE status = 'pending'`,
    );
    expect(await pending()).toBe(rows[0]!.n);
    const id = await claim(member(300));
    expect(await pending()).toBe(rows[0]!.n + 1);
    expect(await reject(id)).toMatchObject({ ok: true });
    expect(await pending()).toBe(rows[0]!.n);
  });

  it('gives the hold back when the request is rejected', async () => {
    const m = member(300);
    const id = await claim(m);
    expect(balance(card, m.id)).toBe(200);
    expect(await reject(id)).toMatchObject({ ok: true });
    expect(holds.get(`claim:${id}`)!.status).toBe('released');
    expect(balance(card, m.id)).toBe(300);
    const { rows } = await claims.db.query('SELECT hold_status FROM claims.claim_requests WHERE id = $1', [id]);
    expect(rows[0]).toEqual({ hold_status: 'released' });
  });

  it('asks again, at the next sweep, for a release the ledger did not answer', async () => {
    const m = member(300);
    const id = await claim(m);
    ledgerAway = true;
    try {
      expect(await reject(id)).toMatchObject({ ok: true }); // the decision stands; the release waits
    } finally {
      ledgerAway = false;
    }
    expect(holds.get(`claim:${id}`)!.status).toBe('held');
    const before = releaseHold.calls.length;
    expect((await claims.service.hooks.sweep()).released).toBeGreaterThanOrEqual(1);
    expect(releaseHold.calls.length).toBeGreaterThan(before);
    expect(holds.get(`claim:${id}`)!.status).toBe('released');
    expect(balance(card, m.id)).toBe(300);
  });

  it('removes a request whose creation died after the hold, releasing the hold', async () => {
    const m = member(300);
    // What a crash between the hold and the request becoming pending leaves behind.
    const { rows } = await claims.db.query<{ id: number }>(
      `INSERT INTO claims.claim_requests (tenant_id, card_id, member_id, reward_id, reward_name, points_cost, created_at, expires_at, status)
       VALUES ($1, $2, $3, $4, 'Free coffee', 100, $5, $5::timestamptz + interval '72 hours', 'holding') RETURNING id`,
      [tenantId, card, m.id, reward, claims.clock.now()],
    );
    const id = rows[0]!.id;
    holds.set(`claim:${id}`, { card, member: m.id, points: 100, status: 'held' });
    balances.set(account(card, m.id), 200);
    expect(await getClaim(id).catch((e: Error) => e.message)).toMatch(/not found/);
    expect((await claims.service.hooks.sweep()).abandoned).toBe(0); // too young: its creation may still be running
    claims.clock.advance(2 * MINUTE);
    expect((await claims.service.hooks.sweep()).abandoned).toBeGreaterThanOrEqual(1);
    expect(holds.get(`claim:${id}`)!.status).toBe('released');
    expect(balance(card, m.id)).toBe(300);
    const left = await claims.db.query('SELECT id FROM claims.claim_requests WHERE id = $1', [id]);
    expect(left.rows).toEqual([]);
  });
});

// Last: these move the clock by hours and sweep every pending request of the file.
describe('expiry', () => {
  it('expires a pending request after the card lifetime; it can then be neither approved nor rejected', async () => {
    const shortCard = createCard(2);
    const shortReward = createReward(shortCard, 10, 'Pin badge');
    const m = member(50, shortCard);
    const id = await claim(m, shortCard, shortReward);
    const record = await getClaim(id);
    expect(Date.parse(record.expires_at) - Date.parse(record.created_at)).toBe(2 * HOUR);

    claims.clock.advance(HOUR);
    await claims.service.hooks.sweep();
    expect((await getClaim(id)).status).toBe('pending');

    claims.clock.advance(HOUR + 1_000);
    expect((await claims.service.hooks.sweep()).expired).toBeGreaterThanOrEqual(1);
    expect((await getClaim(id)).status).toBe('expired');
    const a = await approve(id);
    expect(a).toMatchObject({ ok: false, error: { code: 'claim_request_not_pending', current_status: 'expired' } });
    const r = await reject(id);
    expect(r).toMatchObject({ ok: false, error: { code: 'claim_request_not_pending', current_status: 'expired' } });
    expect(balance(shortCard, m.id)).toBe(50);
    expect(debitsOf(id)).toEqual([]);
    expect(await outboxEvents('claim_expired', id)).toHaveLength(1);
    const expired = await claims.request(ops['claims.list'], publicMeta(tenantId), {
      card_id: shortCard,
      status: 'expired',
    });
    expect(expired.claim_requests.map((x) => x.id)).toEqual([id]);
  });

  it('refuses to approve a request whose lifetime is over even before the sweeper ran', async () => {
    const m = member(500);
    const id = await claim(m); // default lifetime: 72 hours
    claims.clock.advance(72 * HOUR + 1_000);
    const a = await approve(id);
    expect(a).toMatchObject({ ok: false, error: { code: 'claim_request_not_pending', current_status: 'expired' } });
    expect((await getClaim(id)).status).toBe('expired');
    expect(balance(card, m.id)).toBe(500);
    expect(debitsOf(id)).toEqual([]);
    expect(await outboxEvents('claim_expired', id)).toHaveLength(1);
  });

  it("another tenant's approve or reject of an overdue request finds nothing and expires nothing", async () => {
    const m = member(500);
    const id = await claim(m);
    claims.clock.advance(72 * HOUR + 1_000);
    const other = publicMeta(newTenantId());
    for (const op of [ops['claims.approve'], ops['claims.reject']]) {
      const r = await claims.call(op, other, { request_id: id });
      expect(r).toMatchObject({ ok: false, error: { code: 'claim_request_not_found' } });
    }
    const { rows } = await claims.db.query<{ status: string }>(
      'SELECT status FROM claims.claim_requests WHERE id = $1',
      [id],
    );
    expect(rows[0]!.status).toBe('pending'); // still the owner's to expire (or the sweeper's)
    expect(await outboxEvents('claim_expired', id)).toHaveLength(0);
  });

  it('is safe to sweep from several replicas at once: each request expires once', async () => {
    const ids = await Promise.all(Array.from({ length: 8 }, async () => claim(member(200))));
    claims.clock.advance(72 * HOUR + 1_000);
    const replica = await claims.replica();
    try {
      const results = await Promise.all([
        claims.service.hooks.sweep(),
        replica.hooks.sweep(),
        claims.service.hooks.sweep(),
        replica.hooks.sweep(),
      ]);
      expect(results.reduce((s, r) => s + r.expired, 0)).toBeGreaterThanOrEqual(ids.length);
    } finally {
      await replica.stop();
    }
    for (const id of ids) {
      expect((await getClaim(id)).status).toBe('expired');
      expect(await outboxEvents('claim_expired', id)).toHaveLength(1);
    }
  });
});
