import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../scripts/admin-cli.ts';
import { consoleTenant, eventually, signIn, type ConsoleTenant, type StaffApi } from '../support/staff.ts';
import { OPERATOR_TOKEN, staffClient, startTestSystem, type TestSystem } from '../support/system.ts';
import { lotsAgree } from '../support/ledger.ts';

/**
 * The staff API end to end through the gateway (every service, real Postgres, NATS, Redis, SMTP):
 * sign-in, roles, tenant isolation, session expiry and logout, the claims queue, member look-up,
 * adjustments, and the audit log with its hash chain (tampering shows).
 */
let sys: TestSystem;
let staff: StaffApi;
let a: ConsoleTenant;
let b: ConsoleTenant;
let manager: string;
let clerk: string;
let clerkId: number;
let clerkEmail: string;
let otherManager: string;
const HOUR = 3_600_000;

interface AuditEntryView {
  seq: number;
  action: string;
  actor: { type: string; email?: string; id?: string | number };
  target: Record<string, number | string>;
  amounts: Record<string, number>;
  details: Record<string, unknown>;
  request_id: string;
  service: string;
}

async function auditEntries(token: string, query = ''): Promise<AuditEntryView[]> {
  const r = await staff('GET', `/staff/v1/audit?limit=200${query}`, { token });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data!.entries as AuditEntryView[];
}

/** Waits until the audit log shows an entry with `action` (and `match`), returning it. */
function auditRow(token: string, action: string, match: (e: AuditEntryView) => boolean = () => true) {
  return eventually(async () => (await auditEntries(token)).find((e) => e.action === action && match(e)));
}

async function verify(token: string) {
  const r = await staff('GET', '/staff/v1/audit/verify', { token });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data as {
    valid: boolean;
    rows_checked: number;
    head: { seq: number };
    problem: null | { seq: number; reason: string };
  };
}

async function pointsOf(t: ConsoleTenant, memberId: number): Promise<number> {
  const r = await t.api('GET', `/api/v1/loyalty/points/balance?card_id=${t.pointsCard}&member_id=${memberId}`);
  return r.body.data!.points_balance as number;
}

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger', 'claims', 'referrals'] });
  staff = staffClient(sys.url);
  a = await consoleTenant(sys, 3);
  b = await consoleTenant(sys, 1);
  manager = await signIn(staff, a.tenantId, a.managerEmail);
  otherManager = await signIn(staff, b.tenantId, b.managerEmail);
  const invited = await staff('POST', '/staff/v1/staff', {
    token: manager,
    body: { email: `tom.${randomUUID().slice(0, 6)}@cornercoffee.example`, name: 'Tom Berg', role: 'staff' },
    headers: { 'idempotency-key': randomUUID() },
  });
  expect(invited.status, JSON.stringify(invited.body)).toBe(200);
  const tom = invited.body.data!.staff as { id: number; email: string };
  clerkId = tom.id;
  clerkEmail = tom.email;
  clerk = await signIn(staff, a.tenantId, tom.email);
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

describe('sign-in', () => {
  it('issues a staff token for the sandbox code; a wrong code counts; an unknown email gets the same answer and no code', async () => {
    const me = await staff('GET', '/staff/v1/me', { token: manager });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({
      staff: { email: a.managerEmail, role: 'manager', active: true },
      tenant: { id: a.tenantId, sandbox: true },
    });
    const unknown = await staff('POST', '/staff/v1/auth/request-code', {
      body: { tenant_id: a.tenantId, email: 'nobody@example.com' },
    });
    expect(unknown.status).toBe(200);
    expect(unknown.body.data).not.toHaveProperty('code');
    const wrongTenant = await staff('POST', '/staff/v1/auth/request-code', {
      body: { tenant_id: 999_999, email: a.managerEmail },
    });
    expect(wrongTenant.body.data).toEqual(unknown.body.data);
    sys.clock.advance(61_000);
    const code = (
      await staff('POST', '/staff/v1/auth/request-code', { body: { tenant_id: a.tenantId, email: a.managerEmail } })
    ).body.data!.code as string;
    // Another code right away waits for the cooldown, like members'.
    const again = await staff('POST', '/staff/v1/auth/request-code', {
      body: { tenant_id: a.tenantId, email: a.managerEmail },
    });
    expect(again.status).toBe(429);
    expect(again.body.error!.code).toBe('otp_cooldown');
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    const bad = await staff('POST', '/staff/v1/auth/verify-code', {
      body: { tenant_id: a.tenantId, email: a.managerEmail, code: wrong },
    });
    expect(bad.status).toBe(401);
    expect(bad.body.error).toMatchObject({ code: 'invalid_otp', attempts_remaining: 4 });
    // A code of one tenant's staff user does not sign in to another tenant.
    const cross = await staff('POST', '/staff/v1/auth/verify-code', {
      body: { tenant_id: b.tenantId, email: a.managerEmail, code },
    });
    expect(cross.status).toBe(401);
  });

  it('refuses calls without a token or with a wrong one', async () => {
    const none = await staff('GET', '/staff/v1/claims');
    expect(none.status).toBe(401);
    expect(none.body.error!.code).toBe('staff_token_required');
    const wrong = await staff('GET', '/staff/v1/claims', { token: 'st_not-a-token' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error!.code).toBe('invalid_staff_token');
    // A member token or an app key is no staff token.
    const docs = await fetch(`${sys.url}/staff/openapi.json`);
    expect(docs.status).toBe(200);
    expect(((await docs.json()) as { info: { title: string } }).info.title).toContain('staff API');
  });

  it('expires a staff token after 12 hours, and logout ends it at once', async () => {
    sys.clock.advance(61_000);
    const token = await signIn(staff, b.tenantId, b.managerEmail);
    expect((await staff('GET', '/staff/v1/me', { token })).status).toBe(200);
    sys.clock.advance(11 * HOUR);
    expect((await staff('GET', '/staff/v1/me', { token })).status).toBe(200);
    sys.clock.advance(HOUR + 60_000);
    const expired = await staff('GET', '/staff/v1/me', { token });
    expect(expired.status).toBe(401);
    expect(expired.body.error!.code).toBe('invalid_staff_token');

    const fresh = await signIn(staff, b.tenantId, b.managerEmail);
    const other = await (async () => {
      sys.clock.advance(61_000);
      return signIn(staff, b.tenantId, b.managerEmail);
    })();
    const out = await staff('POST', '/staff/v1/auth/logout', { token: fresh });
    expect(out.status).toBe(200);
    expect((await staff('GET', '/staff/v1/me', { token: fresh })).body.error!.code).toBe('invalid_staff_token');
    expect((await staff('POST', '/staff/v1/auth/logout', { token: fresh })).status).toBe(401);
    // Another session of the same user goes on.
    expect((await staff('GET', '/staff/v1/me', { token: other })).status).toBe(200);
    otherManager = other;
    // The other tokens were made 12 h ago on the test clock: sign in again.
    manager = await signIn(staff, a.tenantId, a.managerEmail);
    clerk = await signIn(staff, a.tenantId, clerkEmail);
  });
});

describe('roles', () => {
  it('refuses adjustments, staff management and the audit log to the staff role with 403', async () => {
    const key = { 'idempotency-key': randomUUID() };
    const forbidden = [
      await staff('POST', '/staff/v1/adjustments', {
        token: clerk,
        headers: key,
        body: { card_id: a.pointsCard, member_id: a.members[0]!.id, direction: 'add', points: 10, reason: 'nice' },
      }),
      await staff('GET', '/staff/v1/staff', { token: clerk }),
      await staff('POST', '/staff/v1/staff', {
        token: clerk,
        headers: key,
        body: { email: 'x@example.com', name: 'X', role: 'manager' },
      }),
      await staff('POST', `/staff/v1/staff/${clerkId}`, { token: clerk, headers: key, body: { role: 'manager' } }),
      await staff('GET', '/staff/v1/audit', { token: clerk }),
      await staff('GET', '/staff/v1/audit/verify', { token: clerk }),
    ];
    for (const r of forbidden) {
      expect(r.status, JSON.stringify(r.body)).toBe(403);
      expect(r.body.error!.code).toBe('insufficient_role');
    }
    // 150 earned, 100 of them held by the member's pending claim: nothing else moved.
    expect(await pointsOf(a, a.members[0]!.id)).toBe(50);
    // What the staff role may do.
    expect((await staff('GET', '/staff/v1/claims', { token: clerk })).status).toBe(200);
    expect((await staff('GET', `/staff/v1/members?email=${a.members[0]!.email}`, { token: clerk })).status).toBe(200);
  });

  it('keeps an active manager: the last one cannot demote or deactivate themself', async () => {
    const me = (await staff('GET', '/staff/v1/me', { token: manager })).body.data!.staff as { id: number };
    const r = await staff('POST', `/staff/v1/staff/${me.id}`, {
      token: manager,
      headers: { 'idempotency-key': randomUUID() },
      body: { role: 'staff' },
    });
    expect(r.status).toBe(409);
    expect(r.body.error!.code).toBe('last_manager');
  });
});

describe('claims queue', () => {
  it('lists pending claims first with member, reward, cost and spendable points; approve deducts, reject keeps', async () => {
    const queue = await staff('GET', '/staff/v1/claims?status=pending', { token: clerk });
    expect(queue.status).toBe(200);
    const rows = queue.body.data!.claim_requests as {
      id: number;
      status: string;
      member: { id: number; name: string };
      reward: { name: string; points_cost: number };
      member_points_balance: number;
    }[];
    expect(rows.map((r) => r.id).sort()).toEqual([...a.claims].sort());
    for (const r of rows) {
      expect(r).toMatchObject({ status: 'pending', reward: { name: 'Free coffee', points_cost: 100 } });
      // Spendable: 150 earned, minus the 100 the claim holds.
      expect(r.member_points_balance).toBe(50);
    }

    const [first, second] = a.claims;
    const approved = await staff('POST', `/staff/v1/claims/${first}/approve`, {
      token: clerk,
      headers: { 'idempotency-key': randomUUID() },
      body: { note: 'Enjoy' },
    });
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);
    expect(approved.body.data!.claim_request).toMatchObject({
      id: first,
      status: 'approved',
      points_deducted: 100,
      staff_note: 'Enjoy',
      member_points_balance: 50,
    });
    // The approval took the held points: the spendable balance does not move again.
    expect(await pointsOf(a, a.members[0]!.id)).toBe(50);

    const rejected = await staff('POST', `/staff/v1/claims/${second}/reject`, {
      token: clerk,
      headers: { 'idempotency-key': randomUUID() },
      body: { note: 'Out of stock' },
    });
    expect(rejected.status).toBe(200);
    expect(rejected.body.data!.claim_request).toMatchObject({
      id: second,
      status: 'rejected',
      member_points_balance: 150,
    });
    // The rejection gave the held points back.
    expect(await pointsOf(a, a.members[1]!.id)).toBe(150);

    // Pending first: the one still pending leads the unfiltered queue.
    const all = (await staff('GET', '/staff/v1/claims', { token: clerk })).body.data!.claim_requests as {
      id: number;
      status: string;
    }[];
    expect(all[0]).toMatchObject({ id: a.claims[2], status: 'pending' });
    const filtered = await staff('GET', `/staff/v1/claims?card_id=${a.pointsCard}&status=approved&from=2000-01-01`, {
      token: clerk,
    });
    expect((filtered.body.data!.claim_requests as { id: number }[]).map((r) => r.id)).toEqual([first]);
    const future = await staff('GET', '/staff/v1/claims?from=2999-01-01', { token: clerk });
    expect(future.body.data!.claim_requests).toEqual([]);
    // A time without its offset was read in the server's own time zone: refused, naming the field.
    for (const query of [
      'from=2000-01-01T00:00:00',
      'to=2999-01-01T10:00',
      'from=2000-01-01T00:00:00Z&to=2999-01-01 10:00',
    ])
      for (const path of ['/staff/v1/claims', '/staff/v1/audit']) {
        const local = await staff('GET', `${path}?${query}`, { token: path === '/staff/v1/audit' ? manager : clerk });
        expect(local.status, `${path}?${query}`).toBe(400);
        expect(local.body.error).toMatchObject({ code: 'validation_error' });
        expect((local.body.error!.fields as { field: string }[]).map((f) => f.field)).toEqual([
          query.includes('to=') ? 'to' : 'from',
        ]);
      }
    const instant = await staff('GET', `/staff/v1/claims?from=2000-01-01T00:00:00%2B01:00`, { token: clerk });
    expect(instant.status).toBe(200);
    const again = await staff('POST', `/staff/v1/claims/${first}/reject`, {
      token: clerk,
      headers: { 'idempotency-key': randomUUID() },
      body: {},
    });
    expect(again.status).toBe(409);
  });
});

describe('members', () => {
  it('finds a member by email or phone and shows balances per card, history with paging and referrals', async () => {
    const m = a.members[2]!;
    const found = await staff('GET', `/staff/v1/members?email=${encodeURIComponent(m.email.toUpperCase())}`, {
      token: clerk,
    });
    expect(found.status).toBe(200);
    expect(found.body.data!.member).toMatchObject({ id: m.id, name: m.name, email: m.email });
    const missing = await staff('GET', '/staff/v1/members?phone=%2B999000111222', { token: clerk });
    expect(missing.status).toBe(404);
    expect(missing.body.error!.code).toBe('member_not_found');
    const neither = await staff('GET', '/staff/v1/members', { token: clerk });
    expect(neither.status).toBe(400);

    const balances = await staff('GET', `/staff/v1/members/${m.id}/balances`, { token: clerk });
    expect(balances.status).toBe(200);
    expect(balances.body.data!.balances).toEqual([
      // Member 3's claim is still pending: 100 of the 150 points are held.
      expect.objectContaining({
        card_id: a.pointsCard,
        reward_system: 'points',
        points_balance: 50,
        held_points: 100,
        pending_points: 0,
      }),
      expect.objectContaining({ card_id: a.cashbackCard, reward_system: 'cashback', cashback_balance: 10 }),
    ]);

    const page = await staff('GET', `/staff/v1/members/${m.id}/history?card_id=${a.pointsCard}&limit=1`, {
      token: clerk,
    });
    expect(page.status).toBe(200);
    expect(page.body.data).toMatchObject({
      reward_system: 'points',
      transactions: [{ event: 'staff_added_points', points: 150, amount: 0 }],
      pagination: { limit: 1, offset: 0, total: 1, has_more: false },
    });

    // A referral: member 3 refers a new member; the staff view shows the code and the referral.
    const code = await a.api('GET', `/api/v1/loyalty/cards/${a.pointsCard}/members/${m.id}/referral-code`);
    const newcomer = await a.api('POST', '/api/v1/auth/member/register', {
      body: {
        name: 'Eva New',
        email: `eva.${randomUUID().slice(0, 6)}@example.com`,
        phone: `+3519${Date.now() % 1e8}`,
      },
    });
    const applied = await a.api('POST', '/api/v1/loyalty/referrals/apply', {
      body: {
        referral_code: code.body.data!.referral_code,
        card_id: a.pointsCard,
        referee_member_id: (newcomer.body.data!.member as { id: number }).id,
      },
    });
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    const refs = await staff('GET', `/staff/v1/members/${m.id}/referrals?card_id=${a.pointsCard}`, { token: clerk });
    expect(refs.status).toBe(200);
    expect(refs.body.data).toMatchObject({
      referral_code: code.body.data!.referral_code,
      total: 1,
      referrals: [{ referee_name: 'Eva New', status: 'completed', bonus_points: 100 }],
    });
    const none = await staff('GET', `/staff/v1/members/${a.members[1]!.id}/referrals?card_id=${a.pointsCard}`, {
      token: clerk,
    });
    expect(none.body.data).toMatchObject({ referral_code: null, total: 0 });
    const dashboard = await staff('GET', `/staff/v1/referrals/dashboard?card_id=${a.pointsCard}`, { token: clerk });
    expect(dashboard.status).toBe(200);
    expect((dashboard.body.data!.periods as { period: string }[]).map((p) => p.period)).toEqual([
      '7d',
      '30d',
      '90d',
      'all',
    ]);
    expect(dashboard.body.data!.top_referrers).toEqual([
      expect.objectContaining({ member_id: m.id, total_referrals: 1, successful_referrals: 1 }),
    ]);
  });
});

describe('adjustments', () => {
  it('adds and deducts points and cashback with a reason, idempotently, never below zero', async () => {
    const m = a.members[1]!;
    const key = randomUUID();
    const body = { card_id: a.pointsCard, member_id: m.id, direction: 'add', points: 25, reason: 'Spilled coffee' };
    const added = await staff('POST', '/staff/v1/adjustments', {
      token: manager,
      headers: { 'idempotency-key': key },
      body,
    });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(added.body.data!.adjustment).toMatchObject({
      direction: 'add',
      points: 25,
      previous_balance: 150,
      new_balance: 175,
    });
    const replay = await staff('POST', '/staff/v1/adjustments', {
      token: manager,
      headers: { 'idempotency-key': key },
      body,
    });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.data).toEqual(added.body.data);
    expect(await pointsOf(a, m.id)).toBe(175);

    const history = async () =>
      (await staff('GET', `/staff/v1/members/${m.id}/history?card_id=${a.pointsCard}`, { token: manager })).body.data!;
    const before = await history();
    const tooMuch = await staff('POST', '/staff/v1/adjustments', {
      token: manager,
      headers: { 'idempotency-key': randomUUID() },
      body: { ...body, direction: 'deduct', points: 176 },
    });
    expect(tooMuch.status).toBe(422);
    expect(tooMuch.body.error).toMatchObject({ code: 'insufficient_points', points_balance: 175 });
    expect(await history()).toEqual(before); // nothing written
    expect(await pointsOf(a, m.id)).toBe(175);

    const deducted = await staff('POST', '/staff/v1/adjustments', {
      token: manager,
      headers: { 'idempotency-key': randomUUID() },
      body: { ...body, direction: 'deduct', points: 175 },
    });
    expect(deducted.body.data!.adjustment).toMatchObject({ new_balance: 0 });
    expect((await history()).transactions).toEqual(
      expect.arrayContaining([expect.objectContaining({ event: 'staff_adjustment', points: -175 })]),
    );

    const cash = await staff('POST', '/staff/v1/adjustments', {
      token: manager,
      headers: { 'idempotency-key': randomUUID() },
      body: { card_id: a.cashbackCard, member_id: m.id, direction: 'deduct', amount: 2.5, reason: 'Double earn' },
    });
    expect(cash.status, JSON.stringify(cash.body)).toBe(200);
    expect(cash.body.data!.adjustment).toMatchObject({ amount: 2.5, previous_balance: 10, new_balance: 7.5 });
    const cashTooMuch = await staff('POST', '/staff/v1/adjustments', {
      token: manager,
      headers: { 'idempotency-key': randomUUID() },
      body: { card_id: a.cashbackCard, member_id: m.id, direction: 'deduct', amount: 7.51, reason: 'x' },
    });
    expect(cashTooMuch.status).toBe(422);
    expect(cashTooMuch.body.error!.code).toBe('insufficient_balance');
    const wrongUnit = await staff('POST', '/staff/v1/adjustments', {
      token: manager,
      headers: { 'idempotency-key': randomUUID() },
      body: { card_id: a.cashbackCard, member_id: m.id, direction: 'add', points: 5, reason: 'x' },
    });
    expect(wrongUnit.status).toBe(400);
    const noKey = await staff('POST', '/staff/v1/adjustments', { token: manager, body });
    expect(noKey.status).toBe(400);
    expect(noKey.body.error!.code).toBe('idempotency_key_required');
    const noReason = await staff('POST', '/staff/v1/adjustments', {
      token: manager,
      headers: { 'idempotency-key': randomUUID() },
      body: { ...body, reason: '  ' },
    });
    expect(noReason.status).toBe(400);
    // An added amount is a lot; a deducted one came out of the lots: every account still agrees.
    const { rows } = await sys.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ledger.lots l JOIN ledger.journal j ON j.id = l.journal_id WHERE j.event = 'staff_adjustment'`,
    );
    expect(rows[0]!.n).toBeGreaterThanOrEqual(1);
    await lotsAgree(sys, a.pointsCard);
    await lotsAgree(sys, a.cashbackCard);
  });
});

describe('tenant isolation', () => {
  it("answers another tenant's ids as not found", async () => {
    const key = () => ({ 'idempotency-key': randomUUID() });
    const m = a.members[2]!;
    const checks = [
      [await staff('GET', `/staff/v1/members/${m.id}`, { token: otherManager }), 'member_not_found'],
      [await staff('GET', `/staff/v1/members?email=${m.email}`, { token: otherManager }), 'member_not_found'],
      [await staff('GET', `/staff/v1/members/${m.id}/balances`, { token: otherManager }), 'member_not_found'],
      [
        await staff('GET', `/staff/v1/members/${m.id}/history?card_id=${a.pointsCard}`, { token: otherManager }),
        'card_not_found',
      ],
      [
        await staff('GET', `/staff/v1/members/${b.members[0]!.id}/referrals?card_id=${a.pointsCard}`, {
          token: otherManager,
        }),
        'card_not_found',
      ],
      [
        await staff('POST', `/staff/v1/claims/${a.claims[2]}/approve`, {
          token: otherManager,
          headers: key(),
          body: {},
        }),
        'claim_request_not_found',
      ],
      [
        await staff('POST', `/staff/v1/claims/${a.claims[2]}/reject`, {
          token: otherManager,
          headers: key(),
          body: {},
        }),
        'claim_request_not_found',
      ],
      [
        await staff('POST', '/staff/v1/adjustments', {
          token: otherManager,
          headers: key(),
          body: { card_id: a.pointsCard, member_id: m.id, direction: 'add', points: 1, reason: 'x' },
        }),
        'card_not_found',
      ],
      [
        await staff('POST', '/staff/v1/adjustments', {
          token: otherManager,
          headers: key(),
          body: { card_id: b.pointsCard, member_id: m.id, direction: 'add', points: 1, reason: 'x' },
        }),
        'member_not_found',
      ],
      [
        await staff('POST', `/staff/v1/staff/${clerkId}`, {
          token: otherManager,
          headers: key(),
          body: { active: false },
        }),
        'staff_not_found',
      ],
    ] as const;
    for (const [r, code] of checks) {
      expect(r.status, JSON.stringify(r.body)).toBe(404);
      expect(r.body.error!.code).toBe(code);
    }
    const queue = (await staff('GET', '/staff/v1/claims', { token: otherManager })).body.data!.claim_requests as {
      id: number;
    }[];
    expect(queue.map((c) => c.id)).toEqual(b.claims);
    const audit = await auditEntries(otherManager);
    expect(audit.some((e) => e.target.member_id === m.id)).toBe(false);
    // 150 earned + 100 referral bonus - the 100 its pending claim holds; nothing from tenant B.
    expect(await pointsOf(a, m.id)).toBe(150);
  });
});

describe('audit log', () => {
  it('records every staff and operator action with actor, target, amounts and request id', async () => {
    await sys.admin('POST', `/admin/v1/tenants/${a.tenantId}/cards/${a.pointsCard}`, { referrer_bonus: 120 });
    const app = await sys.admin<{ app: { app_id: string } }>('POST', `/admin/v1/tenants/${a.tenantId}/apps`, {
      name: 'till 2',
      scopes: ['points_read'],
    });
    await sys.admin('POST', `/admin/v1/apps/${app.app.app_id}/rotate-key`);
    await sys.admin('POST', `/admin/v1/apps/${app.app.app_id}/revoke`);
    const deactivated = await staff('POST', `/staff/v1/staff/${clerkId}`, {
      token: manager,
      headers: { 'idempotency-key': randomUUID() },
      body: { active: false },
    });
    expect(deactivated.status).toBe(200);
    // A deactivated user's session ends at once.
    expect((await staff('GET', '/staff/v1/claims', { token: clerk })).body.error!.code).toBe('invalid_staff_token');

    const operator = (e: AuditEntryView) => e.actor.type === 'operator';
    for (const action of [
      'tenant.created',
      'app.created',
      'card.created',
      'reward.created',
      'card.updated',
      'app.key_rotated',
      'app.revoked',
    ])
      await auditRow(manager, action, operator);
    const firstManager = await auditRow(manager, 'staff.created', operator);
    expect(firstManager.details).toMatchObject({ email: a.managerEmail, role: 'manager' });
    const invited = await auditRow(manager, 'staff.created', (e) => e.actor.type === 'staff');
    expect(invited).toMatchObject({
      actor: { email: a.managerEmail },
      target: { staff_id: clerkId },
      service: 'identity',
    });
    const approved = await auditRow(manager, 'claim.approved');
    expect(approved).toMatchObject({
      actor: { type: 'staff', role: 'staff' },
      service: 'claims',
      target: { claim_request_id: a.claims[0], member_id: a.members[0]!.id, card_id: a.pointsCard },
      amounts: { points: -100 },
      details: { note: 'Enjoy' },
    });
    expect(approved.request_id).toMatch(/\S/);
    expect(await auditRow(manager, 'claim.rejected')).toMatchObject({ target: { claim_request_id: a.claims[1] } });
    const adjusted = await auditRow(manager, 'balance.adjusted', (e) => e.amounts.points === 25);
    expect(adjusted).toMatchObject({
      actor: { type: 'staff', role: 'manager' },
      service: 'ledger',
      target: { member_id: a.members[1]!.id, card_id: a.pointsCard },
      details: { reason: 'Spilled coffee', direction: 'add' },
    });
    expect(await auditRow(manager, 'balance.adjusted', (e) => e.amounts.amount === -2.5)).toBeDefined();
    expect(await auditRow(manager, 'staff.deactivated')).toMatchObject({ target: { staff_id: clerkId } });
    // The replayed and the refused adjustments wrote nothing.
    expect((await auditEntries(manager, '&action=balance.adjusted')).length).toBe(3);
    // A claim decided through the merchant API is audited with the app as the actor.
    const decided = await a.api('POST', `/api/v1/loyalty/claims/${a.claims[2]}/reject`, { body: { staff_note: 'no' } });
    expect(decided.status).toBe(200);
    await auditRow(
      manager,
      'claim.rejected',
      (e) => e.actor.type === 'app' && e.target.claim_request_id === a.claims[2],
    );

    // Filters: actor, action (a prefix or exact), date.
    const byActor = await auditEntries(manager, `&actor=${encodeURIComponent(a.managerEmail)}`);
    expect(byActor.length).toBeGreaterThan(0);
    expect(byActor.every((e) => e.actor.email === a.managerEmail)).toBe(true);
    const claimsOnly = await auditEntries(manager, '&action=claim');
    expect(new Set(claimsOnly.map((e) => e.action))).toEqual(new Set(['claim.approved', 'claim.rejected']));
    expect(await auditEntries(manager, '&from=2999-01-01')).toEqual([]);
    const seqs = (await auditEntries(manager)).map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => y - x)); // newest first
  });

  it('verifies the chain and names an edited, a deleted and a deleted last row', async () => {
    const clean = await verify(manager);
    expect(clean).toMatchObject({ valid: true, problem: null });
    expect(clean.rows_checked).toBe(clean.head.seq);
    const db = sys.db;
    const tamper = async (sql: string, args: unknown[]) => {
      await db.query('ALTER TABLE identity.audit_log DISABLE TRIGGER audit_log_append_only');
      try {
        await db.query(sql, args);
      } finally {
        await db.query('ALTER TABLE identity.audit_log ENABLE TRIGGER audit_log_append_only');
      }
    };
    // The log refuses changes while its trigger is on.
    await expect(db.query('DELETE FROM identity.audit_log WHERE tenant_id = $1', [a.tenantId])).rejects.toThrow(
      /append-only/,
    );
    const target = 3;
    const { rows } = await db.query<{ amounts: unknown }>(
      'SELECT amounts FROM identity.audit_log WHERE tenant_id = $1 AND seq = $2',
      [a.tenantId, target],
    );
    await tamper(`UPDATE identity.audit_log SET amounts = '{"points": 1000000}' WHERE tenant_id = $1 AND seq = $2`, [
      a.tenantId,
      target,
    ]);
    const edited = await verify(manager);
    expect(edited.valid).toBe(false);
    expect(edited.problem).toMatchObject({ seq: target, reason: expect.stringMatching(/row 3 was changed/) });
    // The CLI says the same and exits 1.
    const out: string[] = [];
    const code = await runCli(['audit:verify', '--tenant', String(a.tenantId)], {
      env: { LOYALTY_URL: sys.url, OPERATOR_TOKEN },
      out: (t) => out.push(t),
      err: (t) => out.push(t),
      fetch,
    });
    expect(code).toBe(1);
    expect(out.join('\n')).toMatch(/row 3 was changed/);
    await tamper('UPDATE identity.audit_log SET amounts = $3 WHERE tenant_id = $1 AND seq = $2', [
      a.tenantId,
      target,
      JSON.stringify(rows[0]!.amounts),
    ]);
    expect((await verify(manager)).valid).toBe(true);

    // Deleting a row in the middle breaks the sequence at that row.
    const head = (await verify(manager)).head.seq;
    await tamper('DELETE FROM identity.audit_log WHERE tenant_id = $1 AND seq = $2', [a.tenantId, 5]);
    expect((await verify(manager)).problem).toMatchObject({
      seq: 5,
      reason: expect.stringMatching(/row 5 is missing/),
    });
    // Deleting the last row shows against the head (checked on tenant B, whose chain is intact).
    const bHead = (await verify(otherManager)).head.seq;
    await tamper('DELETE FROM identity.audit_log WHERE tenant_id = $1 AND seq = $2', [b.tenantId, bHead]);
    const tail = await verify(otherManager);
    expect(tail.valid).toBe(false);
    expect(tail.problem).toMatchObject({
      seq: bHead,
      reason: expect.stringMatching(new RegExp(`row ${bHead} is missing`)),
    });
    expect(head).toBeGreaterThan(5);
  });
});
