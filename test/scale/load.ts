import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { expect } from 'vitest';
import { OPERATOR_TOKEN } from '../support/system.ts';

/**
 * A client load for the scale-out tests: earns and redemptions with Idempotency-Keys, spread over
 * several gateways, retried the way a careful client retries (same key, another gateway, on a
 * network error or a 5xx), and the checks that every operation was applied exactly once.
 */
export interface Op {
  n: number;
  kind: 'cashback_earn' | 'points_earn' | 'cashback_redeem';
  body: Record<string, unknown>;
  token?: string;
  key: string;
  status?: number;
  code?: string;
  transactionId?: number;
  attempts: number;
}

export interface Member {
  id: number;
  token: string;
}

export interface Fixture {
  gateways: string[];
  app: { appId: string; apiKey: string };
  cashbackCardId: number;
  pointsCardId: number;
  members: Member[];
}

async function json<T>(res: Response): Promise<T> {
  return (await res.json()) as T;
}

export async function provision(gateways: string[], memberCount: number): Promise<Fixture> {
  const gw = gateways[0]!;
  const admin = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${gw}${path}`, {
      method,
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const out = await json<{ success: boolean; data: T }>(res);
    if (!out.success) throw new Error(`${path}: ${JSON.stringify(out)}`);
    return out.data;
  };
  const { tenant } = await admin<{ tenant: { id: number } }>('POST', '/admin/v1/tenants', {
    name: 'scale',
    sandbox: true,
  });
  const { app } = await admin<{ app: { app_id: string; api_key: string } }>(
    'POST',
    `/admin/v1/tenants/${tenant.id}/apps`,
    {
      name: 'scale',
      scopes: ['points_read', 'points_write', 'cashback_read', 'cashback_write', 'card_read'],
    },
  );
  const cashback = await admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenant.id}/cards`, {
    name: 'Scale cashback',
    reward_system: 'cashback',
    cashback_config: { cashback_percentage: 10, cashback_min_amount: 0, cashback_max_amount: null },
  });
  const points = await admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenant.id}/cards`, {
    name: 'Scale points',
    reward_system: 'points',
    points_ratio: 1,
  });
  const headers = { 'x-app-id': app.app_id, 'x-api-key': app.api_key, 'content-type': 'application/json' };
  const members: Member[] = [];
  for (let i = 0; i < memberCount; i++) {
    const email = `scale${i}.${randomBytes(3).toString('hex')}@example.com`;
    const reg = await json<{ data: { member: { id: number }; otp_code: string } }>(
      await fetch(`${gw}/api/v1/auth/member/register`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: `Scale ${i}`, email, phone: `+44700${String(i).padStart(7, '0')}` }),
      }),
    );
    const ver = await json<{ data: { member_token: string } }>(
      await fetch(`${gw}/api/v1/auth/member/verify-otp`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ email, code: reg.data.otp_code }),
      }),
    );
    members.push({ id: reg.data.member.id, token: ver.data.member_token });
  }
  return {
    gateways,
    app: { appId: app.app_id, apiKey: app.api_key },
    cashbackCardId: cashback.card.id,
    pointsCardId: points.card.id,
    members,
  };
}

export function plan(f: Fixture, count: number, tag: string): Op[] {
  const ops: Op[] = [];
  for (let n = 0; n < count; n++) {
    // Every member gets every kind of operation: earns fund the redemptions.
    const member = f.members[Math.floor(n / 3) % f.members.length]!;
    const kind = (['cashback_earn', 'cashback_redeem', 'points_earn'] as const)[n % 3]!;
    const key = `${tag}-${n}`;
    const body =
      kind === 'cashback_earn'
        ? { card_id: f.cashbackCardId, member_id: member.id, purchase_amount: 12.34, reference: key }
        : kind === 'points_earn'
          ? { card_id: f.pointsCardId, member_id: member.id, purchase_amount: 25, reference: key }
          : { card_id: f.cashbackCardId, amount: 1 };
    ops.push({ n, kind, body, key, token: kind === 'cashback_redeem' ? member.token : undefined, attempts: 0 });
  }
  return ops;
}

const paths = {
  cashback_earn: '/api/v1/cashback/cashback/earn',
  cashback_redeem: '/api/v1/cashback/cashback/redeem',
  points_earn: '/api/v1/loyalty/points/earn',
};

/** Send one operation until it has a definitive answer (2xx or 4xx), retrying with the same key. */
async function send(f: Fixture, op: Op, deadline: number): Promise<void> {
  for (;;) {
    op.attempts += 1;
    const gateway = f.gateways[(op.n + op.attempts) % f.gateways.length]!;
    try {
      const res = await fetch(`${gateway}${paths[op.kind]}`, {
        method: 'POST',
        headers: {
          'x-app-id': f.app.appId,
          'x-api-key': f.app.apiKey,
          'content-type': 'application/json',
          'idempotency-key': op.key,
          ...(op.token ? { 'x-member-token': op.token } : {}),
        },
        body: JSON.stringify(op.body),
        signal: AbortSignal.timeout(15_000),
      });
      const out = await json<{ success: boolean; data?: { transaction_id: number }; error?: { code: string } }>(res);
      if (res.status < 500 && res.status !== 429) {
        op.status = res.status;
        op.code = out.error?.code;
        op.transactionId = out.data?.transaction_id;
        return;
      }
    } catch {
      // connection refused / reset: a gateway or the network; retry
    }
    if (Date.now() > deadline) {
      op.status = 0;
      return;
    }
    await new Promise((r) => setTimeout(r, 100 + Math.random() * 150));
  }
}

/** Run the ops with `concurrency` workers; `onProgress(done)` lets the test act midway. */
export async function drive(
  f: Fixture,
  ops: Op[],
  concurrency: number,
  onProgress: (done: number) => Promise<void> | void,
  budgetMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + budgetMs;
  let next = 0;
  let done = 0;
  const workers = Array.from({ length: concurrency }, async () => {
    for (;;) {
      const op = ops[next++];
      if (!op) return;
      await send(f, op, deadline);
      done += 1;
      await onProgress(done);
    }
  });
  await Promise.all(workers);
}

/** The checks: every operation answered, applied exactly once, balances equal their journal. */
export async function verifyExactlyOnce(databaseUrl: string, f: Fixture, ops: Op[]): Promise<void> {
  const unexpected = ops.filter(
    (o) =>
      !(o.status === 200 || (o.kind === 'cashback_redeem' && o.status === 422 && o.code === 'insufficient_balance')),
  );
  expect(unexpected.map((o) => ({ n: o.n, kind: o.kind, status: o.status, code: o.code }))).toEqual([]);
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    // Each earn's reference is in the journal exactly once.
    const earns = ops.filter((o) => o.kind !== 'cashback_redeem');
    const { rows: refs } = await db.query<{ reference: string; n: number }>(
      `SELECT reference, count(*)::int AS n FROM ledger.journal WHERE event IN ('cashback_earned', 'staff_added_points') GROUP BY reference`,
    );
    expect(refs.filter((r) => r.n !== 1)).toEqual([]);
    expect(refs.map((r) => r.reference).sort()).toEqual(earns.map((o) => o.key).sort());
    // Each successful redemption is one journal row, and its answer names that row.
    const redeemed = ops.filter((o) => o.kind === 'cashback_redeem' && o.status === 200);
    const { rows: redemptions } = await db.query<{ id: number }>(
      `SELECT id FROM ledger.journal WHERE event = 'cashback_redeemed'`,
    );
    expect(redemptions.length).toBe(redeemed.length);
    expect(new Set(redeemed.map((o) => o.transactionId)).size).toBe(redeemed.length);
    expect(redemptions.map((r) => r.id).sort((a, b) => a - b)).toEqual(
      redeemed.map((o) => o.transactionId).sort((a, b) => (a ?? 0) - (b ?? 0)),
    );
    // Every stored balance equals the sum of its journal, and none is negative.
    const { rows: drift } = await db.query(
      `SELECT a.card_id, a.member_id, a.balance, coalesce(sum(j.amount), 0)::bigint AS journal
         FROM ledger.accounts a LEFT JOIN ledger.journal j ON j.card_id = a.card_id AND j.member_id = a.member_id
        GROUP BY a.card_id, a.member_id, a.balance HAVING a.balance <> coalesce(sum(j.amount), 0) OR a.balance < 0`,
    );
    expect(drift).toEqual([]);
  } finally {
    await db.end();
  }
}
