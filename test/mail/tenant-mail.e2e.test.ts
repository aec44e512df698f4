import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../scripts/admin-cli.ts';
import { apiClient, OPERATOR_TOKEN, startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * A tenant's mail settings through the operator API and the CLI: branding, default language,
 * From and Reply-To, and the merchant's own SMTP server, whose password is stored sealed and used
 * to log in to that server.
 */
let sys: TestSystem;

/** The merchant's own mail server: it requires a login and records what it received. */
class MerchantSmtp {
  readonly mails: ParsedMail[] = [];
  readonly logins: { username: string; password: string }[] = [];
  private server = new SMTPServer({
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth: (auth, _session, callback) => {
      this.logins.push({ username: auth.username ?? '', password: auth.password ?? '' });
      if (auth.username === 'fidelite' && auth.password === 'p@ss w0rd:/?') callback(null, { user: auth.username });
      else callback(new Error('Invalid username or password'));
    },
    onData: (stream, _session, callback) => {
      simpleParser(stream)
        .then((m) => {
          this.mails.push(m);
          callback();
        })
        .catch(callback);
    },
  });
  async start(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.server.address() as AddressInfo).port;
  }
  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
  async waitFor(to: string, timeoutMs = 5_000): Promise<ParsedMail> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.mails.find((m) => JSON.stringify(m.to).includes(to));
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no mail to ${to} at the merchant's server`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
const merchant = new MerchantSmtp();
let port: number;

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity'] });
  port = await merchant.start();
}, 120_000);
afterAll(async () => {
  await merchant.stop();
  await sys?.stop();
});

async function put(tenantId: number | string, body: unknown) {
  const res = await fetch(`${sys.url}/admin/v1/tenants/${tenantId}/mail`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  // The envelope as JSON: read loosely, each test checks what it needs.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const settings = (smtpPort: number) => ({
  sender_name: 'Café Atlas',
  from_address: 'fidelite@cafe-atlas.example',
  reply_to: 'bonjour@cafe-atlas.example',
  logo_url: 'https://cdn.cafe-atlas.example/logo.png',
  primary_color: '#8a1c2b',
  postal_address: '12 Boulevard Anfa, 20000 Casablanca',
  contact: 'bonjour@cafe-atlas.example',
  default_locale: 'fr',
  smtp: { host: '127.0.0.1', port: smtpPort, username: 'fidelite', password: 'p@ss w0rd:/?' },
});

async function register(creds: { appId: string; apiKey: string }): Promise<string> {
  const email = `atlas.${randomUUID().slice(0, 8)}@example.com`;
  const r = await apiClient(sys.url, creds)('POST', '/api/v1/auth/member/register', {
    body: { name: 'Yasmine <b>Alaoui</b>', email, phone: `+2126${String(Date.now()).slice(-8)}` },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return email;
}

describe('tenant mail settings', () => {
  it('answers the defaults, refuses bad values with the fields named, and an unknown tenant with 404', async () => {
    const t = await sys.tenant({ sandbox: false });
    const got = await sys.admin<{ mail: Record<string, unknown> }>('GET', `/admin/v1/tenants/${t.tenantId}/mail`);
    expect(got.mail).toEqual({
      tenant_id: t.tenantId,
      sender_name: null,
      from_address: null,
      reply_to: null,
      logo_url: null,
      primary_color: '#1f4e79',
      background_color: '#f4f4f4',
      postal_address: null,
      contact: null,
      default_locale: 'en',
      smtp: null,
    });
    const bad = await put(t.tenantId, {
      primary_color: 'red',
      logo_url: 'http://cdn.example.com/logo.png',
      default_locale: 'de',
      reply_to: 'not-an-address',
      sender_name: 'Atlas\r\nBcc: victim@example.com',
      smtp: { host: 'smtp.example.com/evil', port: 70_000 },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_error');
    const fields = (bad.body.error.fields as { field: string }[]).map((f) => f.field).sort();
    expect(fields).toEqual(
      ['default_locale', 'logo_url', 'primary_color', 'reply_to', 'sender_name', 'smtp.host', 'smtp.port'].sort(),
    );
    expect((await put(999_999, {})).status).toBe(404);
  });

  it("sends a tenant's mail from its name and address, with Reply-To, Message-ID and Date, through its own server", async () => {
    const t = await sys.tenant({ sandbox: false });
    const saved = await put(t.tenantId, settings(port));
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    expect(saved.body.data.mail.smtp).toEqual({
      host: '127.0.0.1',
      port,
      secure: false,
      username: 'fidelite',
      password_set: true,
    });
    expect(JSON.stringify(saved.body)).not.toContain('p@ss');
    // At rest the password is sealed under the tenant's data key.
    const { rows } = await sys.db.query<{ smtp_password: string }>(
      `SELECT smtp_password FROM identity.tenant_mail_settings WHERE tenant_id = $1`,
      [t.tenantId],
    );
    expect(rows[0]!.smtp_password).toMatch(/^s1\./);
    expect(rows[0]!.smtp_password).not.toContain('p@ss');

    const email = await register(t);
    const mail = await merchant.waitFor(email);
    expect(merchant.logins.at(-1)).toEqual({ username: 'fidelite', password: 'p@ss w0rd:/?' });
    expect(mail.from?.value).toEqual([{ name: 'Café Atlas', address: 'fidelite@cafe-atlas.example' }]);
    expect(mail.replyTo?.value).toEqual([{ name: '', address: 'bonjour@cafe-atlas.example' }]);
    expect(mail.messageId).toMatch(/^<[0-9a-f-]{36}@cafe-atlas\.example>$/);
    expect(mail.date).toBeInstanceOf(Date);
    expect(Math.abs(mail.date!.getTime() - Date.now())).toBeLessThan(60_000);
    // The tenant's default language, its branding in both parts, the member's name escaped in HTML.
    expect(mail.subject).toBe('Votre code de connexion');
    expect(mail.text).toMatch(/^Bonjour Yasmine <b>Alaoui<\/b>,\n\nVotre code de connexion est \d{6}\./);
    expect(mail.text).toContain('12 Boulevard Anfa, 20000 Casablanca');
    expect(mail.html).toContain('src="https://cdn.cafe-atlas.example/logo.png"');
    expect(mail.html).toContain('#8a1c2b');
    expect(mail.html).toContain('Bonjour Yasmine &lt;b&gt;Alaoui&lt;/b&gt;,');
    expect(mail.html).toContain('lang="fr" dir="ltr"');
    // Nothing reached the platform's server.
    expect(sys.mail.messages.some((m) => m.to.includes(email))).toBe(false);

    // Saved again without a password (same server and username): the stored one is kept.
    const { password: _kept, ...smtp } = settings(port).smtp;
    expect((await put(t.tenantId, { ...settings(port), smtp })).body.data.mail.smtp.password_set).toBe(true);
    const second = await register(t);
    await merchant.waitFor(second);
    expect(merchant.logins.at(-1)?.password).toBe('p@ss w0rd:/?');
  });

  it("keeps a sandbox tenant's mail on the sandbox server, whatever server it set", async () => {
    const t = await sys.tenant({ sandbox: true });
    expect((await put(t.tenantId, settings(port))).status).toBe(200);
    const email = await register(t);
    const mail = await sys.mail.waitFor(email);
    expect(mail.subject).toBe('Votre code de connexion');
    expect(mail.headers.from).toBe('=?UTF-8?Q?Caf=C3=A9_Atlas?= <fidelite@cafe-atlas.example>');
    expect(mail.headers['reply-to']).toBe('bonjour@cafe-atlas.example');
    expect(merchant.mails.some((m) => JSON.stringify(m.to).includes(email))).toBe(false);
  });

  it('sets and shows them with the CLI (the password from SMTP_PASSWORD, never printed)', async () => {
    const t = await sys.tenant({ sandbox: false });
    const out: string[] = [];
    const io = (env: Record<string, string> = {}) => ({
      env: { LOYALTY_URL: sys.url, OPERATOR_TOKEN, ...env },
      out: (s: string) => out.push(s),
      err: (s: string) => out.push(s),
      fetch,
    });
    const { password: _p, ...smtp } = settings(port).smtp;
    const body = JSON.stringify({ ...settings(port), smtp });
    expect(
      await runCli(['tenant:mail:set', '--tenant', String(t.tenantId), body], io({ SMTP_PASSWORD: 'p@ss w0rd:/?' })),
    ).toBe(0);
    expect(await runCli(['tenant:mail', '--tenant', String(t.tenantId), '--json'], io())).toBe(0);
    const shown = JSON.parse(out.at(-1)!) as { mail: { smtp: { password_set: boolean }; default_locale: string } };
    expect(shown.mail.default_locale).toBe('fr');
    expect(shown.mail.smtp.password_set).toBe(true);
    expect(out.join('\n')).not.toContain('p@ss');
    const email = await register(t);
    await merchant.waitFor(email);
    expect(merchant.logins.at(-1)?.password).toBe('p@ss w0rd:/?');
  });
});
