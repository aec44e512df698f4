import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../scripts/admin-cli.ts';
import { eventually, signIn, type StaffApi } from '../support/staff.ts';
import { apiClient, OPERATOR_TOKEN, staffClient, startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * A merchant's own mail templates end to end through the gateway: a manager saves a French
 * template of the sign-in code in the staff API, a member registering in French gets it (read from
 * the SMTP sink, escaped in HTML), an unknown variable is refused with its line and column, a
 * reset brings the default back; the operator does the same with the CLI.
 */
let sys: TestSystem;
let api: ReturnType<typeof apiClient>;
let staff: StaffApi;
let tenantId: number;
let token: string;

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity'] });
  const t = await sys.tenant({ scopes: ['members_manage'] });
  tenantId = t.tenantId;
  api = apiClient(sys.url, t);
  staff = staffClient(sys.url);
  await sys.admin('PUT', `/admin/v1/tenants/${tenantId}/mail`, { sender_name: 'Café Atlas', default_locale: 'en' });
  const email = `maria.${randomUUID().slice(0, 8)}@cafe-atlas.example`;
  await sys.admin('POST', `/admin/v1/tenants/${tenantId}/staff`, { email, name: 'Maria', role: 'manager' });
  token = await signIn(staff, tenantId, email);
}, 120_000);
afterAll(async () => sys?.stop());

let n = 0;
async function registerInFrench(name: string) {
  n += 1;
  const email = `tpl${n}.${randomUUID().slice(0, 8)}@example.com`;
  const r = await api('POST', '/api/v1/auth/member/register', {
    body: { name, email, phone: `+2126${String(10_000_000 + n * 7919 + (Date.now() % 1000)).slice(-8)}`, locale: 'fr' },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return sys.mail.waitFor(email);
}

const french = {
  subject: 'Café Atlas : votre code {{code}}',
  body: 'Bonjour {{name}},\n\nVotre code est {{code}} ({{minutes}} minutes).\n\nÀ bientôt au café !',
};

describe('mail templates through the staff API', () => {
  it('lists the kinds with their variables to a manager', async () => {
    const r = await staff('GET', '/staff/v1/mail/templates', { token });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const kinds = r.body.data!.kinds as { kind: string; variables: { name: string }[] }[];
    expect(kinds.find((k) => k.kind === 'member_code')!.variables.map((v) => v.name)).toEqual([
      'name',
      'code',
      'purpose',
      'minutes',
    ]);
  });

  it('refuses an unknown variable with 422 naming the field, line and column', async () => {
    const r = await staff('PUT', '/staff/v1/mail/templates/member_code/fr', {
      token,
      body: { subject: french.subject, body: 'Bonjour {{name}},\n\nVotre code : {{cdoe}}' },
    });
    expect(r.status).toBe(422);
    expect(r.body.error).toMatchObject({
      code: 'invalid_template',
      fields: [{ field: 'body', line: 3, column: 14, message: expect.stringMatching(/unknown variable "cdoe"/) }],
    });
    const bad = await staff('PUT', '/staff/v1/mail/templates/nothing/fr', { token, body: french });
    expect(bad.status).toBe(400);
  });

  it('sends the saved French template to a member writing in French, escaped in HTML', async () => {
    const saved = await staff('PUT', '/staff/v1/mail/templates/member_code/fr', { token, body: french });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    expect(saved.body.data!.template).toMatchObject({ ...french, custom: true, locale: 'fr' });

    const mail = await registerInFrench('Léa <b>Martin</b>');
    expect(mail.subject).toMatch(/^Café Atlas : votre code \d{6}$/);
    expect(mail.text).toMatch(
      /^Bonjour Léa <b>Martin<\/b>,\n\nVotre code est \d{6} \(10 minutes\)\.\n\nÀ bientôt au café !\n/,
    );
    expect(mail.html).toContain('Bonjour Léa &lt;b&gt;Martin&lt;/b&gt;,');
    expect(mail.html).not.toContain('<b>Martin');

    const shown = await staff('GET', '/staff/v1/mail/templates/member_code/fr', { token });
    expect(shown.body.data!.template).toMatchObject({ ...french, custom: true });
  });

  it('previews without saving', async () => {
    const r = await staff('POST', '/staff/v1/mail/templates/member_code/fr/preview', {
      token,
      body: { subject: 'Essai {{code}}', body: 'Bonjour {{name}}' },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data!.preview).toMatchObject({ subject: 'Essai 482913', text: expect.stringContaining('Ana Silva') });
    const shown = await staff('GET', '/staff/v1/mail/templates/member_code/fr', { token });
    expect(shown.body.data!.template).toMatchObject({ subject: french.subject });
  });

  it('resets to the default, which the next mail uses', async () => {
    const r = await staff('DELETE', '/staff/v1/mail/templates/member_code/fr', { token });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data!.template).toMatchObject({ custom: false, subject: 'Votre code {{purpose}}' });
    const mail = await registerInFrench('Paul');
    expect(mail.subject).toBe('Votre code de connexion');
    expect(mail.text).toMatch(/^Bonjour Paul,\n\nVotre code de connexion est \d{6}\./);
  });

  it('is audited', async () => {
    const actions = await eventually(async () => {
      const r = await staff('GET', '/staff/v1/audit?action=mail', { token });
      const seen = (r.body.data!.entries as { action: string }[]).map((e) => e.action);
      return seen.includes('mail.template_reset') ? seen : undefined;
    });
    expect(actions).toEqual(expect.arrayContaining(['mail.template_updated', 'mail.template_reset']));
  });
});

describe('mail branding through the staff API', () => {
  it('lets a manager change the branding, keeping the From address and SMTP server the operator set', async () => {
    await sys.admin('PUT', `/admin/v1/tenants/${tenantId}/mail`, {
      sender_name: 'Café Atlas',
      from_address: 'fidelite@cafe-atlas.example',
      default_locale: 'en',
      smtp: { host: '127.0.0.1', port: 2525, username: null },
    });
    const r = await staff('PUT', '/staff/v1/mail/settings', {
      token,
      body: { sender_name: 'Café Atlas Anfa', primary_color: '#8a1c2b', default_locale: 'fr' },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data!.mail).toEqual({
      sender_name: 'Café Atlas Anfa',
      reply_to: null,
      logo_url: null,
      primary_color: '#8a1c2b',
      background_color: '#f4f4f4',
      postal_address: null,
      contact: null,
      default_locale: 'fr',
    });
    const operator = await sys.admin<{ mail: Record<string, unknown> }>('GET', `/admin/v1/tenants/${tenantId}/mail`);
    expect(operator.mail).toMatchObject({
      sender_name: 'Café Atlas Anfa',
      from_address: 'fidelite@cafe-atlas.example',
      smtp: { host: '127.0.0.1', port: 2525 },
    });
    const bad = await staff('PUT', '/staff/v1/mail/settings', { token, body: { primary_color: 'red' } });
    expect(bad.status).toBe(400);
    // Back to the platform's server for the tests after this one.
    await sys.admin('PUT', `/admin/v1/tenants/${tenantId}/mail`, { sender_name: 'Café Atlas', default_locale: 'en' });
  });
});

describe('mail templates through the operator CLI', () => {
  it('sets, shows, previews and resets a template', async () => {
    const out: string[] = [];
    const io = {
      env: { LOYALTY_URL: sys.url, OPERATOR_TOKEN },
      out: (s: string) => out.push(s),
      err: (s: string) => out.push(s),
      fetch,
    };
    const file = path.join(tmpdir(), `template-${randomUUID()}.txt`);
    writeFileSync(file, 'Bonjour {{name}},\n\nCode : {{code}}');
    const which = ['--tenant', String(tenantId), '--kind', 'member_code', '--locale', 'fr'];
    expect(await runCli(['tenant:mail:template:set', ...which, '--subject', 'Code {{code}}', '--file', file], io)).toBe(
      0,
    );
    expect(await runCli(['tenant:mail:template', ...which, '--json'], io)).toBe(0);
    expect(JSON.parse(out.at(-1)!)).toMatchObject({
      template: {
        subject: 'Code {{code}}',
        body: 'Bonjour {{name}},\n\nCode : {{code}}',
        custom: true,
        updated_by: { type: 'operator' },
      },
    });
    expect((await registerInFrench('Inès')).subject).toMatch(/^Code \d{6}$/);
    // An unknown variable: the API's refusal, exit code 1.
    expect(await runCli(['tenant:mail:template:set', ...which, '{"subject":"{{nom}}","body":"x"}'], io)).toBe(1);
    expect(out.join('\n')).toMatch(/unknown variable "nom"/);
    expect(
      await runCli(['tenant:mail:template:preview', ...which, '{"subject":"Essai {{code}}","body":"x"}'], io),
    ).toBe(0);
    expect(out.join('\n')).toContain('Essai 482913');
    expect(await runCli(['tenant:mail:template:reset', ...which], io)).toBe(0);
    expect(await runCli(['tenant:mail:templates', '--tenant', String(tenantId), '--json'], io)).toBe(0);
    const listed = JSON.parse(out.at(-1)!) as { kinds: { templates: { custom: boolean }[] }[] };
    expect(listed.kinds.every((k) => k.templates.every((t) => !t.custom))).toBe(true);
  });
});
