import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Subjects } from '@loyalty/contracts';
import { connectAs } from '../support/nats.ts';
import { apiClient, startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * Members' languages: set at registration (optional; an answer without it is as before), changed
 * through the API, the tenant's default otherwise; every mail is written in it, in the tenant's
 * branding. The branded French mail is read from the SMTP sink, as a member gets it.
 */
let sys: TestSystem;
let api: ReturnType<typeof apiClient>;
let tenantId: number;
let nc: Awaited<ReturnType<typeof connectAs>>;

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity'] });
  const t = await sys.tenant({ scopes: ['members_manage'] });
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
  nc = await connectAs('admin', { url: sys.env.NATS_URL });
  await sys.admin('PUT', `/admin/v1/tenants/${tenantId}/mail`, {
    sender_name: 'Café Atlas',
    logo_url: 'https://cdn.cafe-atlas.example/logo.png',
    primary_color: '#8a1c2b',
    postal_address: '12 Boulevard Anfa, 20000 Casablanca',
    contact: 'bonjour@cafe-atlas.example',
    default_locale: 'en',
  });
}, 120_000);
afterAll(async () => {
  await nc?.drain();
  await sys?.stop();
});

let n = 0;
async function register(extra: Record<string, unknown> = {}) {
  n += 1;
  const email = `locale${n}.${randomUUID().slice(0, 8)}@example.com`;
  const r = await api('POST', '/api/v1/auth/member/register', {
    body: {
      name: `Nadia ${n}`,
      email,
      phone: `+2126${String(1_000_000 + n * 7919 + (Date.now() % 1000)).slice(-8)}`,
      ...extra,
    },
  });
  return { r, email };
}

async function publishClaimApproved(memberId: number): Promise<void> {
  const id = randomUUID();
  const subjects = new Subjects(sys.env.SUBJECT_ROOT!);
  const data = { member_id: memberId, reward_name: 'Café <offert>', points_deducted: 1200, staff_note: 'Merci !' };
  const event = { id, type: 'claims.claim_approved', tenant_id: tenantId, occurred_at: new Date().toISOString(), data };
  await nc.jetstream().publish(subjects.event('claims', 'claim_approved'), JSON.stringify(event), { msgID: id });
}

describe('member locale', () => {
  it('is optional at registration: an answer without it has the same fields, and the mail is in the tenant default', async () => {
    const { r, email } = await register();
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.data!).sort()).toEqual(['member', 'message', 'otp_code', 'otp_expires_in_minutes']);
    expect(Object.keys(r.body.data!.member as object).sort()).toEqual(['email', 'id', 'name', 'phone']);
    const mail = await sys.mail.waitFor(email);
    expect(mail.subject).toBe('Your sign-in code');
  });

  it('refuses a language it does not write', async () => {
    const { r } = await register({ locale: 'de' });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({
      code: 'validation_error',
      fields: [expect.objectContaining({ field: 'locale' })],
    });
  });

  it('writes the code in the language given at registration, Arabic right to left', async () => {
    const { r, email } = await register({ locale: 'ar' });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.data!.member as object).sort()).toEqual(['email', 'id', 'name', 'phone']);
    const mail = await sys.mail.waitFor(email);
    expect(mail.subject).toBe('رمز تسجيل الدخول الخاص بك');
    expect(mail.text).toContain(`رمز تسجيل الدخول الخاص بك هو ${String(r.body.data!.otp_code)}`);
  });

  it('changes it through the API, and every later mail follows; null goes back to the tenant default', async () => {
    const { r, email } = await register();
    const memberId = (r.body.data!.member as { id: number }).id;
    const set = await api('PUT', `/api/v1/members/${memberId}/locale`, { body: { locale: 'fr' } });
    expect(set.status).toBe(200);
    expect(set.body.data).toEqual({ member_id: memberId, locale: 'fr', mail_locale: 'fr' });

    // A claim decided: the notification, branded and in French, read from the sink.
    await publishClaimApproved(memberId);
    const mail = await sys.mail.waitFor(email, (m) => m.subject.includes('acceptée'), 10_000);
    expect(mail.subject).toBe('Votre demande de récompense a été acceptée');
    expect(mail.headers.from).toBe('=?UTF-8?Q?Caf=C3=A9_Atlas?= <no-reply@loyalty.local>');
    expect(mail.headers['message-id']).toMatch(/^<[0-9a-f-]{36}@loyalty\.local>$/);
    // A Date header the mail client can read, set when the mail was sent.
    expect(Math.abs(Date.parse(String(mail.headers.date)) - Date.now())).toBeLessThan(10 * 60_000);
    // French groups thousands with a narrow no-break space (the transfer may turn it into another no-break space).
    expect(mail.text.replace(/[\u00a0\u202f]/g, ' ')).toBe(
      `Bonjour Nadia ${n},\n\nVotre demande pour « Café <offert> » a été acceptée ; 1 200 points ont été déduits.\n` +
        'Note de l’équipe : Merci !\n\n--\nCafé Atlas\n12 Boulevard Anfa, 20000 Casablanca\nbonjour@cafe-atlas.example\n',
    );
    expect(mail.html).toContain('lang="fr" dir="ltr"');
    expect(mail.html).toContain('Café &lt;offert&gt;');
    expect(mail.html).toContain('src="https://cdn.cafe-atlas.example/logo.png"');
    expect(mail.html).toContain('background-color:#8a1c2b');

    const back = await api('PUT', `/api/v1/members/${memberId}/locale`, { body: { locale: null } });
    expect(back.body.data).toEqual({ member_id: memberId, locale: null, mail_locale: 'en' });
  });

  it("tells the days of ledger events in the card's time zone when the event names it", async () => {
    const { r, email } = await register({ accepts_emails: true });
    const memberId = (r.body.data!.member as { id: number }).id;
    const subjects = new Subjects(sys.env.SUBJECT_ROOT!);
    const publish = async (type: string, data: Record<string, unknown>) => {
      const id = randomUUID();
      const event = { id, type: `ledger.${type}`, tenant_id: tenantId, occurred_at: new Date().toISOString(), data };
      await nc.jetstream().publish(subjects.event('ledger', type), JSON.stringify(event), { msgID: id });
    };
    // 02:00 UTC on April 1st is still March 31st in Los Angeles.
    await publish('points_expiring', {
      member_id: memberId,
      card_id: 1,
      lots: 1,
      points: 300,
      expires_at: '2027-04-01T02:00:00.000Z',
      expires_on: '2027-04-01',
      time_zone: 'America/Los_Angeles',
    });
    const expiring = await sys.mail.waitFor(email, (m) => m.subject.includes('expire'), 10_000);
    expect(expiring.subject).toBe('300 points expire on March 31, 2027');
    await publish('tier_downgrade_warning', {
      member_id: memberId,
      card_id: 1,
      from: 'Gold',
      to: 'Silver',
      from_rank: 2,
      to_rank: 1,
      valid_until: '2027-04-01T02:00:00.000Z',
      qualifying_total: 100,
      points_needed_to_retain: 50,
      time_zone: 'America/Los_Angeles',
    });
    const warning = await sys.mail.waitFor(email, (m) => m.text.includes('Gold'), 10_000);
    expect(warning.text).toContain('March 31, 2027');
    expect(warning.text).not.toContain('April 1, 2027');
  });

  it('answers 404 for an unknown member and 400 for a bad language', async () => {
    expect((await api('PUT', '/api/v1/members/999999/locale', { body: { locale: 'fr' } })).status).toBe(404);
    const bad = await api('PUT', '/api/v1/members/1/locale', { body: { locale: 'xx' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'validation_error' });
  });
});
