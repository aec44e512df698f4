import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, startTestSystem, type TestSystem } from '../../../test/support/system.ts';

let sys: TestSystem;
let api: ReturnType<typeof apiClient>;
let live: ReturnType<typeof apiClient>;
let n = 0;
/** A fresh member identity per test, so tests do not share cooldowns or codes. */
const person = () => {
  n += 1;
  return {
    name: `Member ${n}`,
    email: `member${n}.${Date.now()}@example.com`,
    phone: `+1555${String(1_000_000 + n * 7919).slice(-7)}`,
  };
};
const AUTH = '/api/v1/auth/member';
const MINUTE = 60_000;

beforeAll(async () => {
  sys = await startTestSystem();
  api = apiClient(sys.url, await sys.tenant({ sandbox: true }));
  live = apiClient(sys.url, await sys.tenant({ sandbox: false }));
});
afterAll(async () => sys?.stop());

async function registered(client = api) {
  const p = person();
  const r = await client('POST', `${AUTH}/register`, { body: p });
  expect(r.status).toBe(200);
  return { ...p, id: (r.body.data!.member as { id: number }).id, code: r.body.data!.otp_code as string | undefined };
}

async function signedIn(client = api) {
  const m = await registered(client);
  const code = m.code ?? (await sys.mail.codeFor(m.email));
  const v = await client('POST', `${AUTH}/verify-otp`, { body: { email: m.email, code } });
  expect(v.status).toBe(200);
  return { ...m, token: v.body.data!.member_token as string };
}

describe('check', () => {
  it('finds a member by email and by phone, with masked personal data', async () => {
    const m = await registered();
    for (const body of [{ email: m.email.toUpperCase() }, { phone: m.phone }]) {
      const r = await api('POST', `${AUTH}/check`, { body });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({
        success: true,
        data: {
          exists: true,
          is_active: true,
          member: { email: expect.stringContaining('***'), phone: expect.stringContaining('***') },
        },
      });
      const member = r.body.data!.member as { email: string; phone: string };
      expect(member.email).not.toBe(m.email);
      expect(member.email.endsWith('@example.com')).toBe(true);
      expect(member.phone.endsWith(m.phone.slice(-4))).toBe(true);
    }
  });

  it('answers exists false with the registration endpoint for an unknown member', async () => {
    const r = await api('POST', `${AUTH}/check`, { body: { email: 'nobody@example.com' } });
    expect(r.body).toEqual({
      success: true,
      data: { exists: false, registration_endpoint: '/api/v1/auth/member/register' },
    });
  });

  it('refuses a body with neither email nor phone, naming the field', async () => {
    const r = await api('POST', `${AUTH}/check`, { body: {} });
    expect(r.status).toBe(400);
    expect(r.body.success).toBe(false);
    expect(r.body.error).toMatchObject({
      code: 'validation_error',
      fields: [{ field: 'email', message: 'email or phone is required' }],
    });
  });
});

describe('register', () => {
  it('creates the member, mails the code and returns it only for a sandbox tenant', async () => {
    const p = person();
    const r = await api('POST', `${AUTH}/register`, { body: { ...p, accepts_emails: true } });
    expect(r.status).toBe(200);
    const d = r.body.data!;
    expect(d).toMatchObject({
      message: expect.any(String),
      otp_expires_in_minutes: 10,
      otp_code: expect.stringMatching(/^\d{6}$/),
    });
    expect(d.member).toEqual({
      id: expect.any(Number),
      name: p.name,
      email: expect.stringContaining('***'),
      phone: expect.stringContaining('***'),
    });
    expect(await sys.mail.codeFor(p.email)).toBe(d.otp_code);
  });

  it('never returns the code to a live tenant, which still receives it by mail', async () => {
    const p = person();
    const r = await live('POST', `${AUTH}/register`, { body: p });
    expect(r.status).toBe(200);
    expect(r.body.data).not.toHaveProperty('otp_code');
    expect(await sys.mail.codeFor(p.email)).toMatch(/^\d{6}$/);
  });

  it('refuses a taken email or phone with 409 and a code saying which', async () => {
    const m = await registered();
    const byEmail = await api('POST', `${AUTH}/register`, { body: { ...person(), email: m.email } });
    expect(byEmail.status).toBe(409);
    expect(byEmail.body.error).toMatchObject({ code: 'email_taken' });
    const byPhone = await api('POST', `${AUTH}/register`, { body: { ...person(), phone: m.phone } });
    expect(byPhone.status).toBe(409);
    expect(byPhone.body.error).toMatchObject({ code: 'phone_taken' });
  });

  it('lets the same email register in another tenant', async () => {
    const m = await registered();
    const other = await live('POST', `${AUTH}/register`, { body: { ...person(), email: m.email } });
    expect(other.status).toBe(200);
  });

  it('names every invalid field', async () => {
    const r = await api('POST', `${AUTH}/register`, { body: { name: '', email: 'not-an-email', phone: '12' } });
    expect(r.status).toBe(400);
    const fields = (r.body.error!.fields as { field: string }[]).map((f) => f.field).sort();
    expect(fields).toEqual(['email', 'name', 'phone']);
  });

  it('replays a retried registration under the same Idempotency-Key and refuses the key with other parameters', async () => {
    const p = person();
    const headers = { 'idempotency-key': `reg-${p.email}` };
    const first = await api('POST', `${AUTH}/register`, { body: p, headers });
    const again = await api('POST', `${AUTH}/register`, { body: p, headers });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const { rows } = await sys.db.query('SELECT count(*)::int AS n FROM identity.members WHERE email = $1', [p.email]);
    expect(rows[0].n).toBe(1);
    const mismatch = await api('POST', `${AUTH}/register`, { body: { ...p, name: 'Someone Else' }, headers });
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.error).toMatchObject({ code: 'idempotency_key_reused' });
  });
});

describe('request-otp', () => {
  it('refuses an unknown member with requires_registration and the registration endpoint', async () => {
    const r = await api('POST', `${AUTH}/request-otp`, { body: { email: 'ghost@example.com' } });
    expect(r.status).toBe(404);
    expect(r.body).toEqual({
      success: false,
      error: {
        code: 'member_not_found',
        message: expect.any(String),
        requires_registration: true,
        registration_endpoint: '/api/v1/auth/member/register',
      },
    });
  });

  it('sends a new code after the cooldown, with every documented field', async () => {
    const m = await registered();
    const early = await api('POST', `${AUTH}/request-otp`, { body: { email: m.email } });
    expect(early.status).toBe(429);
    expect(early.body.error).toMatchObject({ code: 'otp_cooldown' });
    expect(Number(early.headers.get('retry-after'))).toBeGreaterThan(0);
    sys.clock.advance(MINUTE + 1000);
    const before = sys.mail.messages.length;
    const r = await api('POST', `${AUTH}/request-otp`, { body: { email: m.email } });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      message: expect.any(String),
      expires_in_minutes: 10,
      member: { email: expect.stringContaining('***'), phone: expect.stringContaining('***') },
      otp_code: expect.stringMatching(/^\d{6}$/),
    });
    expect(await sys.mail.codeFor(m.email, before)).toBe(r.body.data!.otp_code);
  });

  it('caps codes per email per hour with 429 and Retry-After', async () => {
    const m = await registered(); // the registration code is the first of the hour
    for (let i = 0; i < 4; i++) {
      sys.clock.advance(MINUTE + 1000);
      expect((await api('POST', `${AUTH}/request-otp`, { body: { email: m.email } })).status).toBe(200);
    }
    sys.clock.advance(MINUTE + 1000);
    const capped = await api('POST', `${AUTH}/request-otp`, { body: { email: m.email } });
    expect(capped.status).toBe(429);
    expect(capped.body.error).toMatchObject({ code: 'otp_hourly_limit' });
    expect(Number(capped.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe('verify-otp', () => {
  it('issues a member token with every documented field', async () => {
    const m = await registered();
    const r = await api('POST', `${AUTH}/verify-otp`, { body: { email: m.email, code: m.code } });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      member_token: expect.any(String),
      expires_at: expect.any(String),
      expires_in_minutes: 60,
      member: { id: m.id, email: expect.stringContaining('***'), phone: expect.stringContaining('***'), name: m.name },
    });
    const expiresAt = Date.parse(r.body.data!.expires_at as string);
    expect(expiresAt - sys.clock.now().getTime()).toBeGreaterThan(59 * MINUTE);
  });

  it('refuses a used code', async () => {
    const m = await registered();
    expect((await api('POST', `${AUTH}/verify-otp`, { body: { email: m.email, code: m.code } })).status).toBe(200);
    const again = await api('POST', `${AUTH}/verify-otp`, { body: { email: m.email, code: m.code } });
    expect(again.status).toBe(401);
    expect(again.body.error).toMatchObject({ code: 'invalid_otp' });
  });

  it('refuses an expired code', async () => {
    const m = await registered();
    sys.clock.advance(10 * MINUTE + 1000);
    const r = await api('POST', `${AUTH}/verify-otp`, { body: { email: m.email, code: m.code } });
    expect(r.status).toBe(401);
    expect(r.body.error).toMatchObject({ code: 'otp_expired' });
  });

  it('kills a code after five wrong tries, even for the right digits', async () => {
    const m = await registered();
    const wrong = m.code === '000000' ? '111111' : '000000';
    for (let i = 1; i <= 5; i++) {
      const r = await api('POST', `${AUTH}/verify-otp`, { body: { email: m.email, code: wrong } });
      expect(r.status).toBe(401);
      expect(r.body.error).toMatchObject({ code: 'invalid_otp', attempts_remaining: 5 - i });
    }
    const sixth = await api('POST', `${AUTH}/verify-otp`, { body: { email: m.email, code: wrong } });
    expect(sixth.body.error).toMatchObject({ code: 'otp_attempts_exceeded' });
    const right = await api('POST', `${AUTH}/verify-otp`, { body: { email: m.email, code: m.code } });
    expect(right.status).toBe(401);
    expect(right.body.error).toMatchObject({ code: 'otp_attempts_exceeded' });
  });

  it('only accepts the newest code', async () => {
    const m = await registered();
    sys.clock.advance(MINUTE + 1000);
    const r = await api('POST', `${AUTH}/request-otp`, { body: { email: m.email } });
    const old = await api('POST', `${AUTH}/verify-otp`, { body: { email: m.email, code: m.code } });
    if (m.code !== r.body.data!.otp_code) expect(old.status).toBe(401);
    const fresh = await api('POST', `${AUTH}/verify-otp`, { body: { email: m.email, code: r.body.data!.otp_code } });
    expect(fresh.status).toBe(200);
  });

  it('validates the code format', async () => {
    const r = await api('POST', `${AUTH}/verify-otp`, { body: { email: 'a@example.com', code: '12ab' } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'validation_error', fields: [{ field: 'code' }] });
  });
});

describe('member tokens', () => {
  it('refresh rotates: the new token works and the old one stops', async () => {
    const m = await signedIn();
    const r = await api('POST', `${AUTH}/refresh`, { token: m.token });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      member_token: expect.any(String),
      expires_at: expect.any(String),
      expires_in_minutes: 60,
    });
    const fresh = r.body.data!.member_token as string;
    expect(fresh).not.toBe(m.token);
    const old = await api('POST', `${AUTH}/refresh`, { token: m.token });
    expect(old.status).toBe(401);
    expect(old.body.error).toMatchObject({ code: 'invalid_member_token' });
    expect((await api('POST', `${AUTH}/refresh`, { token: fresh })).status).toBe(200);
  });

  it('logout revokes the token at once', async () => {
    const m = await signedIn();
    const r = await api('POST', `${AUTH}/logout`, { token: m.token });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ message: expect.any(String) });
    const after = await api('POST', `${AUTH}/refresh`, { token: m.token });
    expect(after.status).toBe(401);
    expect(after.body.error).toMatchObject({ code: 'invalid_member_token' });
    expect((await api('POST', `${AUTH}/logout`, { token: m.token })).status).toBe(401);
  });

  it('a token expires after 60 minutes', async () => {
    const m = await signedIn();
    sys.clock.advance(60 * MINUTE + 1000);
    const r = await api('POST', `${AUTH}/refresh`, { token: m.token });
    expect(r.status).toBe(401);
    expect(r.body.error).toMatchObject({ code: 'invalid_member_token' });
  });

  it("refuses another tenant's token", async () => {
    const m = await signedIn(live);
    const r = await api('POST', `${AUTH}/refresh`, { token: m.token });
    expect(r.status).toBe(401);
    expect(r.body.error).toMatchObject({ code: 'invalid_member_token' });
  });

  it('requires a token on refresh and logout', async () => {
    for (const op of ['refresh', 'logout']) {
      const r = await api('POST', `${AUTH}/${op}`);
      expect(r.status).toBe(401);
      expect(r.body.error).toMatchObject({ code: 'member_token_required' });
    }
    const bogus = await api('POST', `${AUTH}/logout`, { token: 'mt_not-a-real-token' });
    expect(bogus.body.error).toMatchObject({ code: 'invalid_member_token' });
  });
});
