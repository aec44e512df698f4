import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type pg from 'pg';
import { apiClient, staffClient, type TestSystem } from '../support/system.ts';
import { eventually, signIn } from '../support/staff.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

export type Api = ReturnType<typeof apiClient>;

/** Every scope a merchant app can hold, members_manage included. */
export const ALL_SCOPES = [
  'points_read',
  'points_write',
  'cashback_read',
  'cashback_write',
  'card_read',
  'webhooks_manage',
  'programme_manage',
  'members_manage',
];

export interface PrivacyTenant {
  tenantId: number;
  appId: string;
  apiKey: string;
  api: Api;
  pointsCard: number;
  reward: number;
  staffToken: string;
  staff: ReturnType<typeof staffClient>;
  receiver: WebhookReceiver;
}

/** A sandbox tenant with an app holding every scope, a points card with a reward, a manager signed in and a webhook receiver. */
export async function privacyTenant(sys: TestSystem): Promise<PrivacyTenant> {
  const t = await sys.tenant({ scopes: ALL_SCOPES });
  const api = apiClient(sys.url, t);
  const { card } = await sys.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${t.tenantId}/cards`, {
    name: 'Points',
    reward_system: 'points',
    points_ratio: 1,
    referrer_bonus: 20,
    referee_bonus: 10,
  });
  const { reward } = await sys.admin<{ reward: { id: number } }>(
    'POST',
    `/admin/v1/tenants/${t.tenantId}/cards/${card.id}/rewards`,
    { name: 'Free coffee', points_cost: 30 },
  );
  const manager = `manager.${randomBytes(3).toString('hex')}@shop.example`;
  await sys.admin('POST', `/admin/v1/tenants/${t.tenantId}/staff`, {
    email: manager,
    name: 'Mia Manager',
    role: 'manager',
  });
  const staff = staffClient(sys.url);
  const staffToken = await signIn(staff, t.tenantId, manager);
  const receiver = await new WebhookReceiver().start();
  const hook = await api('POST', '/api/v1/webhooks/endpoints', {
    body: { url: `http://127.0.0.1:${receiver.port}/hook`, event_types: ['*'] },
  });
  expect(hook.status, JSON.stringify(hook.body)).toBe(200);
  return {
    tenantId: t.tenantId,
    appId: t.appId,
    apiKey: t.apiKey,
    api,
    pointsCard: card.id,
    reward: reward.id,
    staffToken,
    staff,
    receiver,
  };
}

export interface Person {
  id: number;
  name: string;
  email: string;
  phone: string;
  token: string;
}

let n = 0;
/** Register and sign in a member with a name, email and phone unique to this run. */
export async function register(api: Api, first = 'Erin'): Promise<Person> {
  n += 1;
  const tag = randomBytes(4).toString('hex');
  const name = `${first} Quillfeather${tag}`;
  const email = `${first.toLowerCase()}.${tag}@privacy.example`;
  const phone = `+4477009${String(10_000 + ((process.pid * 97 + n * 7919 + Date.now()) % 89_999)).padStart(5, '0')}`;
  const reg = await api('POST', '/api/v1/auth/member/register', { body: { name, email, phone } });
  expect(reg.status, JSON.stringify(reg.body)).toBe(200);
  const v = await api('POST', '/api/v1/auth/member/verify-otp', { body: { email, code: reg.body.data!.otp_code } });
  expect(v.status, JSON.stringify(v.body)).toBe(200);
  return {
    id: (reg.body.data!.member as { id: number }).id,
    name,
    email,
    phone,
    token: v.body.data!.member_token as string,
  };
}

/**
 * The member leaves traces in every service: earns with metadata naming them, a claim with a note,
 * a staff adjustment whose reason names them (audit details), a referral, webhook deliveries.
 */
export async function leaveTraces(t: PrivacyTenant, p: Person, referrer: Person): Promise<void> {
  const code = await t.api('GET', `/api/v1/loyalty/cards/${t.pointsCard}/members/${referrer.id}/referral-code`);
  expect(code.status, JSON.stringify(code.body)).toBe(200);
  const applied = await t.api('POST', '/api/v1/loyalty/referrals/apply', {
    body: { card_id: t.pointsCard, referral_code: code.body.data!.referral_code, referee_member_id: p.id },
  });
  expect(applied.status, JSON.stringify(applied.body)).toBe(200);
  const earn = await t.api('POST', '/api/v1/loyalty/points/earn', {
    body: {
      card_id: t.pointsCard,
      member_id: p.id,
      purchase_amount: 80,
      reference: `order-${p.id}-1`,
      metadata: { customer: p.name, contact: p.email, phone: p.phone },
    },
  });
  expect(earn.status, JSON.stringify(earn.body)).toBe(200);
  const byEmail = await t.api('POST', '/api/v1/loyalty/points/earn', {
    body: { card_id: t.pointsCard, email: p.email, purchase_amount: 20, reference: `receipt for ${p.email}` },
  });
  expect(byEmail.status, JSON.stringify(byEmail.body)).toBe(200);
  const otp = await t.api('POST', '/api/v1/loyalty/claims/request-otp', {
    body: { member_email: p.email, card_id: t.pointsCard, reward_id: t.reward },
  });
  expect(otp.status, JSON.stringify(otp.body)).toBe(200);
  const claim = await t.api('POST', '/api/v1/loyalty/claims', {
    body: {
      member_email: p.email,
      card_id: t.pointsCard,
      reward_id: t.reward,
      verification_code: otp.body.data!.otp_code,
      member_note: `Please call ${p.name} on ${p.phone}`,
    },
  });
  expect(claim.status, JSON.stringify(claim.body)).toBe(200);
  const adjust = await t.staff('POST', '/staff/v1/adjustments', {
    token: t.staffToken,
    headers: { 'idempotency-key': `adj-${p.id}` },
    body: { member_id: p.id, card_id: t.pointsCard, direction: 'add', points: 5, reason: `Goodwill for ${p.name}` },
  });
  expect(adjust.status, JSON.stringify(adjust.body)).toBe(200);
}

/** Every text-like column (text, varchar, json, jsonb) of every service schema, as `schema.table.column`. */
export async function textColumns(db: pg.Pool): Promise<{ schema: string; table: string; column: string }[]> {
  const { rows } = await db.query<{ schema: string; table: string; column: string }>(
    `SELECT c.table_schema AS schema, c.table_name AS table, c.column_name AS column
       FROM information_schema.columns c JOIN information_schema.tables t
         ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
      WHERE c.table_schema IN ('identity', 'ledger', 'claims', 'referrals', 'webhooks')
        AND c.data_type IN ('text', 'character varying', 'json', 'jsonb', 'ARRAY')`,
  );
  return rows;
}

/** Where any of `needles` appears (case-insensitive) in any text column of any schema: `schema.table.column: needle`. */
export async function scanFor(db: pg.Pool, needles: string[]): Promise<string[]> {
  const found: string[] = [];
  for (const c of await textColumns(db)) {
    const col = `"${c.column}"::text`;
    for (const needle of needles) {
      const { rows } = await db.query(
        `SELECT 1 FROM "${c.schema}"."${c.table}" WHERE strpos(lower(${col}), lower($1)) > 0 LIMIT 1`,
        [needle],
      );
      if (rows.length > 0) found.push(`${c.schema}.${c.table}.${c.column}: ${needle}`);
    }
  }
  return found;
}

/** Run identity's queued jobs until `jobId` has ended; its final view. */
export async function jobDone(
  api: Api,
  jobId: string,
  runNow?: () => Promise<boolean>,
  timeoutMs = 30_000,
): Promise<Record<string, unknown>> {
  return eventually(async () => {
    await runNow?.();
    const res = await api('GET', `/api/v1/jobs/${jobId}`);
    const status = res.body.data?.status;
    return status === 'succeeded' || status === 'failed' ? res.body.data : undefined;
  }, timeoutMs);
}

/** The sum of the tenant's journal amounts and of its accounts' balances (they must not move with an erasure). */
export async function books(db: pg.Pool, tenantId: number) {
  const { rows } = await db.query<{ journal: string; rows: string; balances: string; lots: string }>(
    `SELECT (SELECT coalesce(sum(amount), 0) FROM ledger.journal WHERE tenant_id = $1) AS journal,
            (SELECT count(*) FROM ledger.journal WHERE tenant_id = $1) AS rows,
            (SELECT coalesce(sum(balance), 0) FROM ledger.accounts WHERE tenant_id = $1) AS balances,
            (SELECT coalesce(sum(remaining), 0) FROM ledger.lots WHERE tenant_id = $1) AS lots`,
    [tenantId],
  );
  return rows[0];
}
