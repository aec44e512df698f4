import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Subjects } from '@loyalty/contracts';
import { connectAs } from '../support/nats.ts';
import { apiClient, startTestSystem, type TestSystem } from '../support/system.ts';
import { eventually } from '../support/staff.ts';
import { ALL_SCOPES, type Api } from './support.ts';

/**
 * Consents and the two kinds of mail: marketing mail (expiry warnings) goes
 * only with the member's marketing_email consent and carries a one-click unsubscribe (RFC 8058);
 * transactional mail (codes) never waits on consent.
 */
let sys: TestSystem;
let api: Api;
let tenantId: number;
let nc: Awaited<ReturnType<typeof connectAs>>;

beforeAll(async () => {
  sys = await startTestSystem({
    services: ['identity'],
    env: { EARN_MAIL_WINDOW_SECONDS: '0', EARN_MAIL_INTERVAL_MS: '50', PUBLIC_URL: 'https://api.shop.example' },
  });
  const t = await sys.tenant({ scopes: ALL_SCOPES });
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
  nc = await connectAs('admin', { url: sys.env.NATS_URL });
}, 120_000);
afterAll(async () => {
  await nc?.drain();
  await sys?.stop();
});

let n = 0;
async function member(acceptsEmails?: boolean): Promise<{ id: number; email: string }> {
  n += 1;
  const email = `consent${n}.${randomUUID().slice(0, 8)}@example.com`;
  const r = await api('POST', '/api/v1/auth/member/register', {
    body: {
      name: `Consent ${n}`,
      email,
      phone: `+1633${String(1_000_000 + n * 7919 + (Date.now() % 1000)).slice(-7)}`,
      ...(acceptsEmails === undefined ? {} : { accepts_emails: acceptsEmails }),
    },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return { id: (r.body.data!.member as { id: number }).id, email };
}

/** A points earn as the ledger announces it: identity's digest mails it (window 0). */
async function earned(memberId: number, points: number): Promise<void> {
  await publish('points_earned', { member_id: memberId, card_id: 1, points, new_balance: points });
}

/** Points about to expire, as the ledger's sweep announces them: identity mails a warning (marketing). */
async function expiring(memberId: number, points: number): Promise<string> {
  return publish('points_expiring', { member_id: memberId, card_id: 1, points, expires_on: '2027-01-31' });
}

async function publish(type: string, data: Record<string, unknown>): Promise<string> {
  const id = randomUUID();
  const subjects = new Subjects(sys.env.SUBJECT_ROOT!);
  const event = { id, type: `ledger.${type}`, tenant_id: tenantId, occurred_at: new Date().toISOString(), data };
  await nc.jetstream().publish(subjects.event('ledger', type), JSON.stringify(event), { msgID: id });
  return id;
}

const digests = (email: string) =>
  sys.mail.messages.filter((m) => m.to === email && m.subject.startsWith('You earned'));
const warnings = (email: string) => sys.mail.messages.filter((m) => m.to === email && m.subject.includes('expire'));

/** Wait until the digest of `memberId` was handled (mailed or dropped). */
async function digestHandled(memberId: number): Promise<void> {
  await eventually(async () => {
    const { rows } = await sys.db.query(
      `SELECT 1 FROM identity.earn_mail_digests WHERE tenant_id = $1 AND member_id = $2`,
      [tenantId, memberId],
    );
    return rows.length === 0 ? true : undefined;
  });
}

/** Wait until identity's consumer has handled an event (mailed, queued or dropped). */
async function eventHandled(eventId: string): Promise<void> {
  await eventually(async () => {
    const { rows } = await sys.db.query(`SELECT 1 FROM identity.processed_events WHERE event_id = $1`, [eventId]);
    return rows.length > 0 ? true : undefined;
  });
}

describe('GET/PUT /api/v1/members/{member_id}/consents', () => {
  it('shows the consent given at registration, and none for a purpose never asked', async () => {
    const m = await member(true);
    const res = await api('GET', `/api/v1/members/${m.id}/consents`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toEqual({
      member_id: m.id,
      consents: [
        {
          purpose: 'marketing_email',
          granted: true,
          granted_at: expect.any(String),
          withdrawn_at: null,
          source: 'registration',
          updated_at: expect.any(String),
        },
        {
          purpose: 'marketing_sms',
          granted: false,
          granted_at: null,
          withdrawn_at: null,
          source: null,
          updated_at: null,
        },
      ],
    });
  });

  it('grants and withdraws with times and source; setting what is set changes nothing', async () => {
    const m = await member();
    const granted = await api('PUT', `/api/v1/members/${m.id}/consents`, {
      body: { consents: [{ purpose: 'marketing_sms', granted: true }], source: 'pos' },
    });
    expect(granted.status, JSON.stringify(granted.body)).toBe(200);
    const sms = (granted.body.data!.consents as Record<string, unknown>[])[1]!;
    expect(sms).toMatchObject({ purpose: 'marketing_sms', granted: true, withdrawn_at: null, source: 'pos' });
    const again = await api('PUT', `/api/v1/members/${m.id}/consents`, {
      body: { consents: [{ purpose: 'marketing_sms', granted: true }], source: 'web' },
    });
    expect((again.body.data!.consents as Record<string, unknown>[])[1]).toEqual(sms);
    const withdrawn = await api('PUT', `/api/v1/members/${m.id}/consents`, {
      body: { consents: [{ purpose: 'marketing_sms', granted: false }] },
    });
    expect((withdrawn.body.data!.consents as Record<string, unknown>[])[1]).toMatchObject({
      granted: false,
      granted_at: sms.granted_at,
      withdrawn_at: expect.any(String),
      source: 'api',
    });
  });

  it('refuses bad input, another tenant and an app without members_manage, changing nothing', async () => {
    const m = await member();
    for (const body of [
      { consents: [] },
      { consents: [{ purpose: 'carrier_pigeon', granted: true }] },
      { consents: [{ purpose: 'marketing_sms', granted: 'yes' }] },
      {
        consents: [
          { purpose: 'marketing_sms', granted: true },
          { purpose: 'marketing_sms', granted: false },
        ],
      },
      { consents: [{ purpose: 'marketing_sms', granted: true }], source: 'Not A Source!' },
    ]) {
      const res = await api('PUT', `/api/v1/members/${m.id}/consents`, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error?.code).toBe('validation_error');
    }
    const other = apiClient(sys.url, await sys.tenant({ scopes: ['members_manage'] }));
    expect((await other('GET', `/api/v1/members/${m.id}/consents`)).status).toBe(404);
    const narrow = apiClient(sys.url, await sys.tenant());
    expect((await narrow('GET', `/api/v1/members/${m.id}/consents`)).status).toBe(403);
    const res = await api('GET', `/api/v1/members/${m.id}/consents`);
    expect((res.body.data!.consents as { granted: boolean }[]).map((c) => c.granted)).toEqual([false, false]);
  });
});

describe('marketing and transactional mail', () => {
  it('mails expiry warnings only with consent, with a one-click unsubscribe that withdraws it', async () => {
    const without = await member(false);
    const withConsent = await member(true);
    // The sign-in code is transactional: it went to both.
    expect(sys.mail.messages.some((x) => x.to === without.email && x.subject.includes('sign-in code'))).toBe(true);
    const dropped = await expiring(without.id, 10);
    await expiring(withConsent.id, 20);
    const mail = await sys.mail.waitFor(withConsent.email, (x) => x.subject.includes('expire'));
    await eventHandled(dropped);
    await new Promise((r) => setTimeout(r, 1_000)); // the sender's pass after that commit
    expect(warnings(without.email)).toEqual([]);

    expect(mail.headers['list-unsubscribe-post']).toBe('List-Unsubscribe=One-Click');
    const link = /^<(https:\/\/api\.shop\.example\/api\/v1\/unsubscribe\?token=[^>]+)>$/.exec(
      mail.headers['list-unsubscribe'] ?? '',
    )?.[1];
    expect(link, mail.headers['list-unsubscribe']).toBeDefined();
    expect(mail.text).toContain(link!);

    // The link, against this system's gateway: a GET shows a page and changes nothing, the one-click POST withdraws.
    const local = link!.replace('https://api.shop.example', sys.url);
    const page = await fetch(local);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<form method="post"');
    // Not framed by another site (the button cannot be overlaid), no script, no referrer (the URL holds the token).
    const pageHeaders = (h: Headers) => ({
      csp: h.get('content-security-policy'),
      frame: h.get('x-frame-options'),
      sniff: h.get('x-content-type-options'),
      referrer: h.get('referrer-policy'),
    });
    const expectedHeaders = {
      csp: expect.stringContaining("frame-ancestors 'none'"),
      frame: 'DENY',
      sniff: 'nosniff',
      referrer: 'no-referrer',
    };
    expect(pageHeaders(page.headers)).toEqual(expectedHeaders);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const before = await api('GET', `/api/v1/members/${withConsent.id}/consents`);
    expect((before.body.data!.consents as { granted: boolean }[])[0]!.granted).toBe(true);
    const click = await fetch(local, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(click.status).toBe(200);
    expect(pageHeaders(click.headers)).toEqual(expectedHeaders);
    const after = await api('GET', `/api/v1/members/${withConsent.id}/consents`);
    expect((after.body.data!.consents as Record<string, unknown>[])[0]).toMatchObject({
      purpose: 'marketing_email',
      granted: false,
      withdrawn_at: expect.any(String),
      source: 'unsubscribe_link',
    });
    // Clicked twice: still done.
    expect((await fetch(local, { method: 'POST' })).status).toBe(200);

    const later = await expiring(withConsent.id, 30);
    await eventHandled(later);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(warnings(withConsent.email)).toHaveLength(1);
  });

  it('an unsubscribe link of a member merged away since withdraws the consent of the member it was merged into', async () => {
    const source = await member(true);
    const target = await member(true);
    await expiring(source.id, 20);
    const mail = await sys.mail.waitFor(source.email, (x) => x.subject.includes('expire'));
    const link = /^<https:\/\/api\.shop\.example(\/api\/v1\/unsubscribe\?token=[^>]+)>$/.exec(
      mail.headers['list-unsubscribe'] ?? '',
    )?.[1];
    expect(link, mail.headers['list-unsubscribe']).toBeDefined();
    const merge = await api('POST', `/api/v1/members/${target.id}/merge`, { body: { source_member_id: source.id } });
    expect(merge.status, JSON.stringify(merge.body)).toBe(202);
    // The same person: the link in the mail they already have still stops their marketing mail.
    const click = await fetch(`${sys.url}${link!}`, { method: 'POST' });
    expect(click.status).toBe(200);
    const after = await api('GET', `/api/v1/members/${target.id}/consents`);
    expect((after.body.data!.consents as Record<string, unknown>[])[0]).toMatchObject({
      purpose: 'marketing_email',
      granted: false,
      source: 'unsubscribe_link',
    });
  });

  it("mails the points-earned digest, the receipt of the member's purchases, whatever their consents", async () => {
    const without = await member(false);
    await earned(without.id, 10);
    const mail = await sys.mail.waitFor(without.email, (x) => x.subject.startsWith('You earned'));
    await digestHandled(without.id);
    expect(digests(without.email)).toHaveLength(1);
    expect(mail.headers['list-unsubscribe']).toBeUndefined();
  });

  it('refuses a forged or malformed unsubscribe link', async () => {
    const m = await member(true);
    const forged = `u1.${tenantId}.${m.id}.marketing_email.${'A'.repeat(43)}`;
    for (const token of [forged, 'nope', '']) {
      const res = await fetch(`${sys.url}/api/v1/unsubscribe?token=${encodeURIComponent(token)}`, { method: 'POST' });
      expect(res.status, token).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_unsubscribe_token');
    }
    const res = await api('GET', `/api/v1/members/${m.id}/consents`);
    expect((res.body.data!.consents as { granted: boolean }[])[0]!.granted).toBe(true);
  });
});
