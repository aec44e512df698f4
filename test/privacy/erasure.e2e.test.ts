import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, OPERATOR_TOKEN, startTestSystem, type TestSystem } from '../support/system.ts';
import { checkResponse } from '../support/contract.ts';
import { eventually } from '../support/staff.ts';
import {
  books,
  jobDone,
  leaveTraces,
  privacyTenant,
  register,
  scanFor,
  type Person,
  type PrivacyTenant,
} from './support.ts';

/**
 * A member's erasure through every service: the member becomes a tombstone at once (404 on every
 * route naming them, tokens dead, email and phone free), the job asks each service for its part,
 * and afterwards no text column of any schema holds their name, email or phone, while the books
 * and the audit chain are as they were.
 */
let sys: TestSystem;
let t: PrivacyTenant;
let erin: Person;
let referrer: Person;
let bystander: Person;

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity', 'ledger', 'claims', 'referrals', 'webhooks'] });
  t = await privacyTenant(sys);
  referrer = await register(t.api, 'Rita');
  erin = await register(t.api, 'Erin');
  bystander = await register(t.api, 'Bo');
  await leaveTraces(t, erin, referrer);
  // The adjustment's audit row and the webhook deliveries are written after the responses.
  await eventually(async () => {
    const { rows } = await sys.db.query(
      `SELECT 1 FROM identity.audit_log WHERE tenant_id = $1 AND action = 'balance.adjusted'`,
      [t.tenantId],
    );
    return rows.length > 0 ? true : undefined;
  });
  await eventually(async () =>
    t.receiver.received.some((r) => r.event.type === 'member.registered' && r.event.data.member_id === erin.id)
      ? true
      : undefined,
  );
}, 180_000);
afterAll(async () => {
  await t?.receiver.stop();
  await sys?.stop();
});

const runJobs = () => sys.services.identity!.runJobNow();

/** The export's document, downloaded from the job's result_url. */
async function exported(memberId: number): Promise<Record<string, Record<string, unknown>>> {
  const res = await t.api('POST', `/api/v1/members/${memberId}/export`);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  expect(res.body.data).toMatchObject({ kind: 'member.export', status: 'queued' });
  const done = await jobDone(t.api, res.body.data!.id as string, runJobs);
  expect(done).toMatchObject({ status: 'succeeded', progress: { done: 5, total: 5 }, errors: [] });
  const download = await fetch(`${sys.url}${done.result_url as string}`, {
    headers: { 'x-app-id': t.appId, 'x-api-key': t.apiKey },
  });
  expect(download.status).toBe(200);
  expect(download.headers.get('content-type')).toBe('application/json');
  return (await download.json()) as Record<string, Record<string, unknown>>;
}

/** A points card of the tenant with a Bronze/Gold ladder (Gold from `entry`, kept from `retain`). */
async function tieredCard(name: string, entry: number, retain: number): Promise<{ id: number }> {
  const { card } = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${t.tenantId}/cards`, {
    name,
    reward_system: 'points',
    points_ratio: 1,
  });
  const ladder = await t.api('PUT', `/api/v1/loyalty/cards/${card.id}/tiers`, {
    body: {
      tiers: [
        { name: 'Bronze', rank: 0, entry_threshold: 0, retain_threshold: 0 },
        { name: 'Gold', rank: 1, entry_threshold: entry, retain_threshold: retain },
      ],
    },
  });
  expect(ladder.status, JSON.stringify(ladder.body)).toBe(200);
  return card;
}

describe('POST /api/v1/members/{member_id}/export', () => {
  it("gathers every service's part into one JSON document", async () => {
    // A tier set by hand, with a reason naming the member (free text about them).
    const tiered = await tieredCard('Tiered by hand', 100000, 50000);
    const manual = await t.staff('PUT', `/staff/v1/cards/${tiered.id}/members/${erin.id}/tier`, {
      token: t.staffToken,
      body: { tier: 'Gold', valid_until: '2099-01-01T00:00:00Z', reason: `Goodwill: ${erin.name} complained` },
    });
    expect(manual.status, JSON.stringify(manual.body)).toBe(200);
    const doc = await exported(erin.id);
    expect(doc).toMatchObject({ format: 'loyalty-member-export/1', member_id: erin.id, tenant_id: t.tenantId });
    const identity = doc.identity!;
    expect(identity.profile).toMatchObject({ id: erin.id, name: erin.name, email: erin.email, phone: erin.phone });
    expect((identity.sessions as unknown[]).length).toBeGreaterThanOrEqual(1);
    expect((identity.consents as { purpose: string }[]).map((c) => c.purpose)).toEqual([
      'marketing_email',
      'marketing_sms',
    ]);
    expect(JSON.stringify(identity.sessions)).not.toMatch(/token/);
    expect(identity.audit_entries).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          action: 'balance.adjusted',
          details: { reason: `Goodwill for ${erin.name}`, direction: 'add' },
        }),
      ]),
    );
    // Staff did some of it: their role is there, not who they are (another person's data).
    const actors = (identity.audit_entries as { actor: Record<string, unknown> }[]).map((e) => e.actor);
    expect(actors).toContainEqual({ type: 'staff', role: 'manager' });
    expect(JSON.stringify(actors)).not.toContain('@shop.example');
    const ledger = doc.ledger as Record<string, Record<string, unknown>[]>;
    expect(ledger.accounts).toEqual([expect.objectContaining({ card_id: t.pointsCard, member_id: erin.id })]);
    expect(ledger.journal!.map((j) => j.event)).toEqual(expect.arrayContaining(['staff_adjustment']));
    expect(ledger.journal!.some((j) => JSON.stringify(j.metadata).includes(erin.email))).toBe(true);
    expect(ledger.lots!.length).toBeGreaterThanOrEqual(2);
    expect(ledger.holds).toEqual([expect.objectContaining({ status: 'held', amount: 30 })]);
    expect(ledger.tiers).toEqual([
      expect.objectContaining({ card_id: tiered.id, rank: 1, manual_reason: `Goodwill: ${erin.name} complained` }),
    ]);
    const claims = doc.claims as Record<string, Record<string, unknown>[]>;
    expect(claims.claim_requests).toEqual([
      expect.objectContaining({ member_id: erin.id, member_note: `Please call ${erin.name} on ${erin.phone}` }),
    ]);
    expect(claims.claim_requests![0]).not.toHaveProperty('decided_by');
    const referrals = doc.referrals as Record<string, Record<string, unknown>[]>;
    expect(referrals.referrals).toEqual([expect.objectContaining({ referee_id: erin.id, referrer_id: referrer.id })]);
    const webhooks = doc.webhooks as Record<string, Record<string, unknown>[]>;
    const types = webhooks.deliveries!.map((d) => (d.event as { type: string }).type);
    expect(types).toEqual(expect.arrayContaining(['member.registered', 'points.earned', 'claim.requested']));
    // Nothing of another member.
    expect(JSON.stringify(doc)).not.toContain(bystander.email);
  });

  it('pages through a part larger than one page', async () => {
    const many = await register(t.api, 'Max');
    for (let i = 0; i < 230; i++) {
      const earn = await t.api('POST', '/api/v1/loyalty/points/earn', {
        body: { card_id: t.pointsCard, member_id: many.id, purchase_amount: 1, reference: `bulk-${many.id}-${i}` },
      });
      expect(earn.status).toBe(200);
    }
    const doc = await exported(many.id);
    const journal = (doc.ledger as Record<string, { id: number }[]>).journal!;
    expect(journal).toHaveLength(230);
    expect(new Set(journal.map((j) => j.id)).size).toBe(230);
  });
});

describe('POST /api/v1/members/{member_id}/erase', () => {
  it('refuses an app without members_manage and a member of another tenant', async () => {
    const narrow = await sys.tenant();
    const res = await apiClient(sys.url, narrow)('POST', `/api/v1/members/${erin.id}/erase`);
    expect(res.status).toBe(403);
    const other = await sys.tenant({ scopes: ['members_manage'] });
    const foreign = await apiClient(sys.url, other)('POST', `/api/v1/members/${erin.id}/erase`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error?.code).toBe('member_not_found');
  });

  it('erases the member everywhere, keeps the books and the audit chain, and answers the same job twice', async () => {
    const before = await books(sys.db, t.tenantId);
    const verifiedBefore = await t.staff('GET', '/staff/v1/audit/verify', { token: t.staffToken });
    expect(verifiedBefore.body.data?.valid).toBe(true);
    expect(await scanFor(sys.db, [erin.name, erin.email, erin.phone])).not.toEqual([]);

    const first = await t.api('POST', `/api/v1/members/${erin.id}/erase`);
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    const job = first.body.data!;
    expect(job).toMatchObject({ kind: 'member.erase', status: 'queued', progress: { done: 0, total: null } });
    const again = await t.api('POST', `/api/v1/members/${erin.id}/erase`);
    expect(again.status).toBe(202);
    expect(again.body.data!.id).toBe(job.id);

    // A tombstone at once: every route naming the member answers 404, the token is dead.
    const balance = await t.api('GET', `/api/v1/loyalty/points/balance?card_id=${t.pointsCard}&member_id=${erin.id}`);
    expect(balance.status).toBe(404);
    expect(balance.body.error?.code).toBe('member_not_found');
    const signIn = await t.api('POST', '/api/v1/auth/member/request-otp', { body: { email: erin.email } });
    expect(signIn.status).toBe(404);
    const refresh = await t.api('POST', '/api/v1/auth/member/refresh', { token: erin.token });
    expect(refresh.status).toBe(401);
    const staffView = await t.staff('GET', `/staff/v1/members/${erin.id}`, { token: t.staffToken });
    expect(staffView.status).toBe(404);

    const done = await jobDone(t.api, job.id as string, runJobs);
    expect(done).toMatchObject({ status: 'succeeded', progress: { done: 5, total: 5 }, errors: [] });
    const third = await t.api('POST', `/api/v1/members/${erin.id}/erase`);
    expect(third.body.data).toMatchObject({ id: job.id, status: 'succeeded' });

    expect(await scanFor(sys.db, [erin.name, erin.email, erin.phone])).toEqual([]);
    // Other members' data is untouched.
    expect(await scanFor(sys.db, [bystander.email])).not.toEqual([]);
    expect(await books(sys.db, t.tenantId)).toEqual(before);
    const verified = await t.staff('GET', '/staff/v1/audit/verify', { token: t.staffToken });
    expect(verified.body.data).toMatchObject({ valid: true, problem: null });
    expect(verified.body.data!.erased_details).toBeGreaterThanOrEqual(1);

    // member.erased goes out to the tenant's webhooks.
    await eventually(async () =>
      t.receiver.received.find((r) => r.event.type === 'member.erased' && r.event.data.member_id === erin.id),
    );
  });

  it('exports an erased member no more, and their earlier exports are gone', async () => {
    const res = await t.api('POST', `/api/v1/members/${erin.id}/export`);
    expect(res.status).toBe(404);
    expect(res.body.error?.code).toBe('member_not_found');
    const { rows } = await sys.db.query(
      `SELECT count(*)::int AS n FROM identity.job_results r JOIN identity.jobs j ON j.id = r.job_id
        WHERE j.kind = 'member.export' AND j.params->>'member_id' = $1::text`,
      [erin.id],
    );
    expect(rows[0].n).toBe(0);
  });

  it("lets a new member register with the erased member's email and phone", async () => {
    const reg = await t.api('POST', '/api/v1/auth/member/register', {
      body: { name: 'Someone New', email: erin.email, phone: erin.phone },
    });
    expect(reg.status, JSON.stringify(reg.body)).toBe(200);
    expect((reg.body.data!.member as { id: number }).id).not.toBe(erin.id);
  });

  it('answers 404 member_not_found for an unknown member', async () => {
    const res = await t.api('POST', '/api/v1/members/999999999/erase');
    expect(res.status).toBe(404);
    expect(res.body.error?.code).toBe('member_not_found');
  });

  it("answers an erased or merged-away member's tier 404 member_not_found, and sets them none by hand", async () => {
    // Tiers were answered from the tier and account rows a tombstone keeps: 200 with the erased
    // member's tier, and a tier set by hand for them (audited, announced as tier.upgraded).
    const card = await tieredCard('Tiered', 100, 50);
    const [erased, duplicate, kept] = [
      await register(t.api, 'Tia'),
      await register(t.api, 'Dee'),
      await register(t.api, 'Kim'),
    ];
    for (const p of [erased, duplicate, kept]) {
      const earn = await t.api('POST', '/api/v1/loyalty/points/earn', {
        body: { card_id: card.id, member_id: p.id, purchase_amount: 150 },
      });
      expect(earn.body.data?.tier).toMatchObject({ name: 'Gold', upgraded: true });
    }
    expect((await t.api('POST', `/api/v1/members/${erased.id}/erase`)).status).toBe(202);
    const merge = await t.api('POST', `/api/v1/members/${kept.id}/merge`, { body: { source_member_id: duplicate.id } });
    expect(merge.status, JSON.stringify(merge.body)).toBe(202);

    const operator = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${sys.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${OPERATOR_TOKEN}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json: unknown = await res.json();
      checkResponse(method, path, res.status, json);
      return { status: res.status, body: json as { error?: { code: string } } };
    };
    const manual = { tier: 'Bronze', valid_until: '2099-01-01T00:00:00Z', reason: 'Set by hand' };
    for (const gone of [erased, duplicate]) {
      const own = await t.api('GET', `/api/v1/loyalty/cards/${card.id}/members/${gone.id}/tier`);
      expect(own.status, JSON.stringify(own.body)).toBe(404);
      expect(own.body.error?.code).toBe('member_not_found');
      const staffView = await t.staff('GET', `/staff/v1/cards/${card.id}/members/${gone.id}/tier`, {
        token: t.staffToken,
      });
      expect(staffView.status).toBe(404);
      const path = `/admin/v1/tenants/${t.tenantId}/cards/${card.id}/members/${gone.id}/tier`;
      expect((await operator('GET', path)).body.error?.code).toBe('member_not_found');
      const set = await operator('PUT', path, manual);
      expect(set.status).toBe(404);
      expect(set.body.error?.code).toBe('member_not_found');
      const byStaff = await t.staff('PUT', `/staff/v1/cards/${card.id}/members/${gone.id}/tier`, {
        token: t.staffToken,
        body: manual,
      });
      expect(byStaff.status).toBe(404);
    }
    const { rows } = await sys.db.query(
      'SELECT member_id FROM ledger.member_tiers WHERE card_id = $1 AND manual_reason IS NOT NULL',
      [card.id],
    );
    expect(rows).toEqual([]);
    // A living member is answered as before.
    const alive = await t.api('GET', `/api/v1/loyalty/cards/${card.id}/members/${kept.id}/tier`);
    expect(alive.status).toBe(200);
    expect(alive.body.data).toMatchObject({ tier: { name: 'Gold' } });
  });

  it("takes an erased member's referral code for no code: validate and apply refuse it, nobody is paid", async () => {
    // Validate answered is_valid: false, but apply accepted the code and paid the referrer bonus
    // to the erased member (and the referee's), answering "bonus points were awarded to both".
    const referrerOf = await register(t.api, 'Ray');
    const code = await t.api('GET', `/api/v1/loyalty/cards/${t.pointsCard}/members/${referrerOf.id}/referral-code`);
    expect(code.status).toBe(200);
    const referralCode = code.body.data!.referral_code as string;
    expect((await t.api('POST', `/api/v1/members/${referrerOf.id}/erase`)).status).toBe(202);
    const referee = await register(t.api, 'Neve');
    const valid = await t.api('POST', '/api/v1/loyalty/referrals/validate-code', {
      body: { card_id: t.pointsCard, referral_code: referralCode },
    });
    expect(valid.body.data).toEqual({ is_valid: false, referrer: null });
    const applied = await t.api('POST', '/api/v1/loyalty/referrals/apply', {
      body: { card_id: t.pointsCard, referral_code: referralCode, referee_member_id: referee.id },
    });
    expect(applied.status, JSON.stringify(applied.body)).toBe(404);
    expect(applied.body.error?.code).toBe('referral_code_not_found');
    const { rows } = await sys.db.query(
      'SELECT id FROM referrals.referrals WHERE tenant_id = $1 AND referrer_id = $2',
      [t.tenantId, referrerOf.id],
    );
    expect(rows).toEqual([]);
    const paid = await sys.db.query(
      `SELECT member_id FROM ledger.journal WHERE tenant_id = $1 AND event = 'referral_bonus' AND member_id IN ($2, $3)`,
      [t.tenantId, referrerOf.id, referee.id],
    );
    expect(paid.rows).toEqual([]);
  });

  it("pays no referrer bonus to a referrer erased while the referral waited for the referee's first purchase", async () => {
    // The referee's purchase made the referral due and both bonuses were credited: the erased
    // referrer's tombstone got its 20 points.
    const { card } = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${t.tenantId}/cards`, {
      name: 'First purchase',
      reward_system: 'points',
      points_ratio: 1,
      referrer_bonus: 20,
      referee_bonus: 10,
      referral_bonus_on_first_purchase: true,
    });
    const gone = await register(t.api, 'Gus');
    const referee = await register(t.api, 'Pia');
    const code = await t.api('GET', `/api/v1/loyalty/cards/${card.id}/members/${gone.id}/referral-code`);
    const applied = await t.api('POST', '/api/v1/loyalty/referrals/apply', {
      body: { card_id: card.id, referral_code: code.body.data!.referral_code, referee_member_id: referee.id },
    });
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    expect(applied.body.data!.referral).toMatchObject({ status: 'pending', referrer_bonus: 20 });
    expect((await t.api('POST', `/api/v1/members/${gone.id}/erase`)).status).toBe(202);
    const earn = await t.api('POST', '/api/v1/loyalty/points/earn', {
      body: { card_id: card.id, member_id: referee.id, purchase_amount: 5 },
    });
    expect(earn.status, JSON.stringify(earn.body)).toBe(200);
    const referral = await eventually(async () => {
      const { rows } = await sys.db.query<{ status: string; referrer_bonus: number; referee_bonus: number }>(
        'SELECT status, referrer_bonus, referee_bonus FROM referrals.referrals WHERE card_id = $1',
        [card.id],
      );
      return rows[0]?.status === 'completed' ? rows[0] : undefined;
    });
    // The referee is paid; the referral says what was paid.
    expect(referral).toEqual({ status: 'completed', referrer_bonus: 0, referee_bonus: 10 });
    const paid = await sys.db.query<{ member_id: string; amount: string }>(
      `SELECT member_id::text, amount::text FROM ledger.journal WHERE card_id = $1 AND event = 'referral_bonus'`,
      [card.id],
    );
    expect(paid.rows).toEqual([{ member_id: String(referee.id), amount: '10' }]);
  });
});
