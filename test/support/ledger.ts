import { expect } from 'vitest';
import { apiClient, type TestSystem } from './system.ts';

// Ledger set-up shared by the ledger's own tests and the system tests: cards, rewards, signed-in
// members, and the lot invariants checked straight against the ledger's tables.

export type Api = ReturnType<typeof apiClient>;
type Body = Record<string, unknown>;

let n = 0;
/** A fresh email per call, unique across files and runs. */
export function email(tag = 'm'): string {
  n += 1;
  return `${tag}${n}.${process.pid}.${Date.now()}@example.com`;
}

export async function cashbackCard(
  sys: TestSystem,
  tenantId: number,
  config: Body = {},
  extra: Body = {},
): Promise<number> {
  const { card } = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenantId}/cards`, {
    name: 'Cashback card',
    description: 'test cashback',
    reward_system: 'cashback',
    currency: 'EUR',
    cashback_config: {
      cashback_percentage: 5,
      cashback_min_amount: 10,
      cashback_max_amount: 50,
      allows_pin_redemption: false,
      ...config,
    },
    ...extra,
  });
  return card.id;
}

export async function pointsCard(sys: TestSystem, tenantId: number, extra: Body = {}): Promise<number> {
  const { card } = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenantId}/cards`, {
    name: 'Points card',
    reward_system: 'points',
    points_ratio: 1,
    ...extra,
  });
  return card.id;
}

export async function reward(
  sys: TestSystem,
  tenantId: number,
  cardId: number,
  pointsCost: number,
  extra: Body = {},
): Promise<number> {
  const r = await sys.admin<{ reward: { id: number } }>(
    'POST',
    `/admin/v1/tenants/${tenantId}/cards/${cardId}/rewards`,
    { name: `Reward ${pointsCost}`, points_cost: pointsCost, ...extra },
  );
  return r.reward.id;
}

/** Register a member and sign in (sandbox tenant: the code comes back in the response). */
export async function signedIn(api: Api): Promise<{ id: number; email: string; token: string }> {
  const address = email('signin');
  n += 1;
  const phone = `+1777${String(1_000_000 + ((n * 7919 + process.pid * 31 + Date.now()) % 9_000_000)).slice(-7)}`;
  // They agree to marketing mail (points-earned digests and expiry warnings are sent with consent only).
  const reg = await api('POST', '/api/v1/auth/member/register', {
    body: { name: 'Signed In', email: address, phone, accepts_emails: true },
  });
  expect(reg.status, JSON.stringify(reg.body)).toBe(200);
  const v = await api('POST', '/api/v1/auth/member/verify-otp', {
    body: { email: address, code: reg.body.data!.otp_code },
  });
  expect(v.status, JSON.stringify(v.body)).toBe(200);
  return {
    id: (reg.body.data!.member as { id: number }).id,
    email: address,
    token: v.body.data!.member_token as string,
  };
}

/**
 * The lot invariants of every account of the card (or of one member): the spendable balance is
 * what its spendable lots have left, `pending` what its pending lots have, `held` what its held
 * holds took from lots, and the journal sums to all three. Every account's entry count is its
 * number of journal rows. Answers the number of accounts checked.
 */
export async function lotsAgree(sys: Pick<TestSystem, 'db'>, cardId: number, memberId?: number): Promise<number> {
  const { rows } = await sys.db.query<Record<string, string>>(
    `SELECT a.member_id::text, a.balance::text, a.pending::text, a.held::text, a.entries::text,
            (SELECT COALESCE(sum(remaining), 0) FROM ledger.lots l WHERE l.card_id = a.card_id AND l.member_id = a.member_id AND NOT l.pending)::text AS spendable_lots,
            (SELECT COALESCE(sum(remaining), 0) FROM ledger.lots l WHERE l.card_id = a.card_id AND l.member_id = a.member_id AND l.pending)::text AS pending_lots,
            (SELECT COALESCE(sum(hl.amount), 0) FROM ledger.holds h JOIN ledger.hold_lots hl ON hl.hold_id = h.id
              WHERE h.card_id = a.card_id AND h.member_id = a.member_id AND h.status = 'held')::text AS held_lots,
            (SELECT COALESCE(sum(amount), 0) FROM ledger.holds h WHERE h.card_id = a.card_id AND h.member_id = a.member_id AND h.status = 'held')::text AS holds,
            (SELECT COALESCE(sum(amount), 0) FROM ledger.journal j WHERE j.card_id = a.card_id AND j.member_id = a.member_id)::text AS journal,
            (SELECT count(*) FROM ledger.journal j WHERE j.card_id = a.card_id AND j.member_id = a.member_id)::text AS counted
       FROM ledger.accounts a WHERE a.card_id = $1 AND ($2::bigint IS NULL OR a.member_id = $2)`,
    [cardId, memberId ?? null],
  );
  for (const r of rows) {
    const n = Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v)]));
    const who = `member ${n.member_id} on card ${cardId}`;
    expect(n.balance, `${who}: balance = spendable lots`).toBe(n.spendable_lots);
    expect(n.pending, `${who}: pending = pending lots`).toBe(n.pending_lots);
    expect(n.held, `${who}: held = held holds`).toBe(n.holds);
    expect(n.held, `${who}: held = what holds took from lots`).toBe(n.held_lots);
    expect(n.journal, `${who}: journal = balance + pending + held`).toBe(n.balance! + n.pending! + n.held!);
    expect(n.entries, `${who}: entries = journal rows`).toBe(n.counted);
    expect(n.balance, `${who}: never negative`).toBeGreaterThanOrEqual(0);
  }
  return rows.length;
}
