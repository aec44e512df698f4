import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminOperations,
  AppError,
  mailOperations,
  mailTemplateOperations,
  staffOperations,
  type StaffMeta,
} from '@loyalty/contracts';
import type { Queryable } from '@loyalty/runtime';
import { eventually } from '../../../test/support/staff.ts';
import { operatorMeta, startService, type ServiceRunner } from '../../../test/support/service-runner.ts';
import { renderFor, tenantMail } from '../src/mail/messages.ts';

/**
 * A tenant's own templates in identity on its own: saved by a manager (validated first, audited),
 * used by the renderer for that kind and language only, read again only when they changed (a
 * tenant without templates costs no read), previewed without saving, reset to the default.
 */
let identity: ServiceRunner<'identity'>;
let tenant: number;
const s = staffOperations;

const managerMeta = (role: 'manager' | 'staff' = 'manager'): StaffMeta => ({
  request_id: randomUUID(),
  tenant_id: tenant,
  staff: { id: 1, role, email: 'maria@example.com' },
  session_id: 1,
});

/** The pool, counting its queries (the renderer's reads per message). */
function counting(db: Queryable) {
  const counter = { n: 0, db: undefined as unknown as Queryable };
  counter.db = {
    query: (...args: unknown[]) => {
      counter.n += 1;
      return (db.query as (...a: unknown[]) => unknown)(...args);
    },
  } as Queryable;
  return counter;
}

async function approvedMail(locale: 'en' | 'fr') {
  const c = counting(identity.db);
  const t = await tenantMail(c.db, tenant);
  const mail = await renderFor(
    t!,
    'claim_approved',
    () => ({ name: 'Ana <b>Silva</b>', reward: 'Café & <i>offert</i>', points: '1 200', staff_note: '' }),
    { locale },
  );
  return { mail, queries: c.n };
}

const own = {
  subject: 'Bravo {{name}}',
  body: 'Bonjour {{name}},\n\n« {{reward}} » est à vous.{{#if staff_note}} {{staff_note}}{{/if}}',
};

beforeAll(async () => {
  identity = await startService('identity');
  const created = await identity.request(adminOperations['admin.tenant.create'], operatorMeta(), {
    name: 'Café Atlas',
    sandbox: true,
  });
  tenant = created.tenant.id;
  await identity.request(mailOperations['admin.tenant.mail.update'], operatorMeta(), {
    tenant_id: tenant,
    primary_color: '#8a1c2b',
    default_locale: 'fr',
  });
}, 60_000);
afterAll(async () => identity?.stop());

describe('mail templates', () => {
  it('lists every kind with its variables, samples per language and no own template yet', async () => {
    const { kinds } = await identity.request(s['staff.mail.templates.list'], managerMeta(), {});
    expect(kinds.map((k) => k.kind)).toContain('claim_approved');
    const approved = kinds.find((k) => k.kind === 'claim_approved')!;
    expect(approved.variables.map((v) => v.name)).toEqual(['name', 'reward', 'points', 'staff_note']);
    expect(approved.variables[2]).toMatchObject({ description: expect.any(String), samples: { fr: '100' } });
    expect(approved.templates).toEqual([
      { locale: 'en', custom: false, updated_at: null },
      { locale: 'fr', custom: false, updated_at: null },
      { locale: 'ar', custom: false, updated_at: null },
    ]);
    const { template } = await identity.request(s['staff.mail.templates.get'], managerMeta(), {
      kind: 'claim_approved',
      locale: 'fr',
    });
    expect(template).toMatchObject({ custom: false, subject: 'Votre demande de récompense a été acceptée' });
    expect(template.default.subject).toBe(template.subject);
  });

  it('costs the renderer no read of templates while the tenant has none', async () => {
    const { mail, queries } = await approvedMail('fr');
    expect(mail.subject).toBe('Votre demande de récompense a été acceptée');
    expect(queries).toBe(1);
  });

  it('refuses an unknown variable with its field, line and column, saving nothing', async () => {
    const err = await identity
      .request(s['staff.mail.templates.update'], managerMeta(), {
        kind: 'claim_approved',
        locale: 'fr',
        subject: 'Bravo {{name}}',
        body: 'Bonjour {{name}},\n\nVotre {{recompense}} est prête.',
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('invalid_template');
    expect((err as AppError).details.fields).toEqual([
      expect.objectContaining({ field: 'body', line: 3, column: 7, message: expect.stringMatching(/recompense/) }),
    ]);
    const { rows } = await identity.db.query(`SELECT 1 FROM identity.mail_templates WHERE tenant_id = $1`, [tenant]);
    expect(rows).toEqual([]);
  });

  it('is for managers only', async () => {
    const r = await identity.call(s['staff.mail.templates.update'], managerMeta('staff'), {
      kind: 'claim_approved',
      locale: 'fr',
      ...own,
    });
    expect(r).toMatchObject({ ok: false, error: { code: 'insufficient_role' } });
  });

  it('saves, audits, and is used for its kind and language only, member text escaped', async () => {
    const { template } = await identity.request(s['staff.mail.templates.update'], managerMeta(), {
      kind: 'claim_approved',
      locale: 'fr',
      ...own,
    });
    expect(template).toMatchObject({
      ...own,
      custom: true,
      updated_by: { type: 'staff', id: 1, email: 'maria@example.com', role: 'manager' },
    });
    const fr = await approvedMail('fr');
    expect(fr.mail.subject).toBe('Bravo Ana <b>Silva</b>');
    expect(fr.mail.text).toMatch(/^Bonjour Ana <b>Silva<\/b>,\n\n« Café & <i>offert<\/i> » est à vous\.\n/);
    expect(fr.mail.html).toContain('« Café &amp; &lt;i&gt;offert&lt;/i&gt; » est à vous.');
    expect(fr.mail.html).not.toContain('<i>offert');
    expect(fr.queries).toBe(2); // the tenant's row, then its templates (changed since the last message)
    expect((await approvedMail('fr')).queries).toBe(1); // kept: the stamp did not change
    expect((await approvedMail('en')).mail.subject).toBe('Your reward claim was approved');

    const audit = await eventually(async () => {
      const page = await identity.request(s['staff.audit.list'], managerMeta(), { action: 'mail' });
      return page.entries.find((e) => e.action === 'mail.template_updated');
    });
    expect(audit.target).toEqual({ kind: 'claim_approved', locale: 'fr' });
  });

  it('sees a save made elsewhere (another replica) at the next message', async () => {
    await identity.db.query(
      `UPDATE identity.mail_templates SET subject = 'Félicitations {{name}}',
              revision = nextval('identity.mail_template_revisions')
        WHERE tenant_id = $1 AND kind = 'claim_approved' AND locale = 'fr'`,
      [tenant],
    );
    expect((await approvedMail('fr')).mail.subject).toBe('Félicitations Ana <b>Silva</b>');
  });

  it('previews a text with the samples in the branding without saving it; refuses an invalid one', async () => {
    const { preview } = await identity.request(s['staff.mail.templates.preview'], managerMeta(), {
      kind: 'points_expiring',
      locale: 'fr',
      subject: 'Vite, {{points}} points',
      body: 'Bonjour {{name}},\n\nIls expirent le {{expires_on}}.',
    });
    expect(preview.subject).toBe('Vite, 300 points');
    expect(preview.text).toContain('Ils expirent le 31 mars 2027.');
    expect(preview.text).toContain('Se désabonner'); // a marketing kind shows its unsubscribe footer
    expect(preview.html).toContain('background-color:#8a1c2b');
    expect(preview.html).toContain('lang="fr"');
    const bad = await identity.call(s['staff.mail.templates.preview'], managerMeta(), {
      kind: 'points_expiring',
      locale: 'fr',
      subject: '{{{points}}}',
      body: 'x',
    });
    expect(bad).toMatchObject({ ok: false, error: { code: 'invalid_template', fields: [{ field: 'subject' }] } });
    const { rows } = await identity.db.query(
      `SELECT 1 FROM identity.mail_templates WHERE tenant_id = $1 AND kind = 'points_expiring'`,
      [tenant],
    );
    expect(rows).toEqual([]);
  });

  it('resets to the default (audited), for the operator too', async () => {
    const op = mailTemplateOperations;
    const saved = await identity.request(op['admin.tenant.mail.templates.update'], operatorMeta(), {
      tenant_id: tenant,
      kind: 'member_code',
      locale: 'en',
      subject: 'Code {{code}}',
      body: 'Hi {{name}}: {{code}}',
    });
    expect(saved.template.updated_by).toEqual({ type: 'operator' });
    const reset = await identity.request(s['staff.mail.templates.reset'], managerMeta(), {
      kind: 'claim_approved',
      locale: 'fr',
    });
    expect(reset.template).toMatchObject({ custom: false, subject: 'Votre demande de récompense a été acceptée' });
    expect((await approvedMail('fr')).mail.subject).toBe('Votre demande de récompense a été acceptée');
    await identity.request(op['admin.tenant.mail.templates.reset'], operatorMeta(), {
      tenant_id: tenant,
      kind: 'member_code',
      locale: 'en',
    });
    expect((await approvedMail('fr')).queries).toBe(1);
    const listed = await identity.request(op['admin.tenant.mail.templates.list'], operatorMeta(), {
      tenant_id: tenant,
    });
    expect(listed.kinds.every((k) => k.templates.every((t) => !t.custom))).toBe(true);
    await eventually(async () => {
      const page = await identity.request(s['staff.audit.list'], managerMeta(), { action: 'mail' });
      const resets = page.entries.filter((e) => e.action === 'mail.template_reset');
      return resets.length === 2 ? resets : undefined;
    });
    const missing = await identity.call(op['admin.tenant.mail.templates.get'], operatorMeta(), {
      tenant_id: 999_999_999,
      kind: 'member_code',
      locale: 'en',
    });
    expect(missing).toMatchObject({ ok: false, error: { code: 'tenant_not_found' } });
  });
});
