import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { COMPILED_LAYOUTS_FILE, compiledLayoutsModule } from '../scripts/compile-mail-layouts.ts';
import {
  catalog,
  DEFAULT_BACKGROUND,
  defaultBranding,
  Formatter,
  LOCALES,
  MAIL_KINDS,
  renderMail,
  sampleVars,
  validateTemplate,
  type Branding,
} from '../src/mail/render/index.ts';

/**
 * Every message kind in every language, text and HTML, as files under __snapshots__/mail (open
 * the .html ones in a browser to see them). A change of wording or layout shows in review as a
 * change of these files.
 */
const branding: Branding = {
  ...defaultBranding('Café Atlas'),
  logo_url: 'https://cdn.example.com/atlas/logo.png',
  primary_color: '#8a1c2b',
  postal_address: '12 Boulevard Anfa, 20000 Casablanca',
  contact: 'bonjour@cafe-atlas.example · +212 522 000 000',
};
const unsubscribe = 'https://loyalty.example.com/api/v1/unsubscribe?token=sample';

describe('default templates', () => {
  for (const kind of MAIL_KINDS) {
    for (const locale of LOCALES) {
      it(`${kind} in ${locale}`, async () => {
        const marketing = catalog[kind].category === 'marketing';
        const mail = await renderMail({
          kind,
          locale,
          vars: sampleVars(kind, locale),
          branding,
          unsubscribeUrl: marketing ? unsubscribe : undefined,
        });
        expect(validateTemplate(kind, catalog[kind].defaults[locale])).toEqual([]);
        await expect(`Subject: ${mail.subject}\n\n${mail.text}`).toMatchFileSnapshot(
          `__snapshots__/mail/${kind}.${locale}.txt`,
        );
        await expect(mail.html).toMatchFileSnapshot(`__snapshots__/mail/${kind}.${locale}.html`);
        expect(mail.html).toContain(`lang="${locale}" dir="${locale === 'ar' ? 'rtl' : 'ltr'}"`);
        expect(mail.html).toContain('Café Atlas');
        expect(mail.html).toContain('12 Boulevard Anfa');
        expect(mail.text).toContain('12 Boulevard Anfa');
        expect(mail.html.includes(unsubscribe)).toBe(marketing);
        expect(mail.text.includes(unsubscribe)).toBe(marketing);
        expect(mail.html).not.toMatch(/%%LOYALTY_|\{\{|#0f1e2d|#2d1e0f/);
      });
    }
  }
});

describe('rendering', () => {
  it('escapes what members and staff typed in the HTML part, and keeps it as typed in the text', async () => {
    const mail = await renderMail({
      kind: 'claim_rejected',
      locale: 'en',
      vars: { name: '<script>alert(1)</script>', reward: 'Tea & "cake"', staff_note: '<img src=x onerror=alert(1)>' },
      branding: defaultBranding('Shop <b>'),
    });
    expect(mail.html).not.toContain('<script>');
    expect(mail.html).not.toContain('<img src=x');
    expect(mail.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(mail.html).toContain('Tea &amp; &quot;cake&quot;');
    expect(mail.html).toContain('Shop &lt;b&gt;');
    expect(mail.text).toContain('Hello <script>alert(1)</script>,');
    expect(mail.text).toContain('Note from staff: <img src=x onerror=alert(1)>');
  });

  it('uses the tenant’s template, and $ in values is kept as is', async () => {
    const mail = await renderMail({
      kind: 'claim_approved',
      locale: 'fr',
      vars: { name: 'Ana', reward: 'Menu $&$1', points: '100', staff_note: '' },
      branding: defaultBranding('Shop'),
      template: {
        subject: 'Bravo {{name}}',
        body: 'Salut {{name}} !\n\n{{reward}}{{#if staff_note}} — {{staff_note}}{{/if}}',
      },
    });
    expect(mail.subject).toBe('Bravo Ana');
    expect(mail.text).toBe('Salut Ana !\n\nMenu $&$1\n');
    expect(mail.html).toContain('Menu $&amp;$1');
  });

  it('formats numbers, money and days for the locale, instants in the card’s time zone', () => {
    const en = new Formatter('en');
    const fr = new Formatter('fr', 'America/Los_Angeles');
    const ar = new Formatter('ar', 'Africa/Casablanca');
    expect(en.number(1234567)).toBe('1,234,567');
    expect(fr.number(1234567)).toBe('1\u202f234\u202f567');
    expect(en.money(12.5, 'EUR')).toBe('€12.50');
    expect(fr.money(12.5, 'EUR')).toBe('12,50\u00a0€');
    expect(ar.money(12.5, 'MAD')).toMatch(/12[.,٫]50|١٢٫٥٠/);
    expect(en.date('2027-03-31')).toBe('March 31, 2027');
    expect(fr.date('2027-03-31')).toBe('31 mars 2027');
    // 02:00 UTC on April 1st is still March 31st in Los Angeles.
    expect(fr.date('2027-04-01T02:00:00Z')).toBe('31 mars 2027');
    expect(new Formatter('en', 'Not/AZone').date('2027-04-01T02:00:00Z')).toBe('April 1, 2027');
    expect(en.money(5, 'xx')).toBe('5');
  });
});

describe('compiled layouts', () => {
  it('are what MJML makes of the layout source now (npm run mail:layouts writes them)', async () => {
    expect(readFileSync(COMPILED_LAYOUTS_FILE, 'utf8')).toBe(await compiledLayoutsModule());
  }, 60_000);

  it('take the tenant’s name without a logo, its colours, and refuse what is not a colour', async () => {
    const mail = await renderMail({
      kind: 'member_code',
      locale: 'fr',
      vars: sampleVars('member_code', 'fr'),
      branding: { ...defaultBranding('Épicerie "Nour" & fils'), primary_color: '#123abc', background_color: 'red;x' },
    });
    expect(mail.html).toContain('Épicerie &quot;Nour&quot; &amp; fils');
    expect(mail.html).not.toContain('<img');
    expect(mail.html).toContain('#123abc');
    expect(mail.html).toContain(DEFAULT_BACKGROUND);
    expect(mail.html).not.toContain('red;x');
    expect(mail.html).not.toMatch(/%%LOYALTY_|#0f1e2d|#2d1e0f/);
  });
});

describe('template validation', () => {
  const ok = { subject: 'Hi {{name}}', body: 'Hello {{name}}' };
  const errors = (t: { subject?: string; body?: string }, kind: (typeof MAIL_KINDS)[number] = 'claim_approved') =>
    validateTemplate(kind, { ...ok, ...t });

  it('accepts the kind’s variables and if/unless blocks', () => {
    expect(
      errors({ body: '{{#if staff_note}}{{staff_note}}{{else}}—{{/if}} {{#unless points}}x{{/unless}} {{! note }}' }),
    ).toEqual([]);
  });
  it('refuses unknown variables, naming the place and the known ones', () => {
    expect(errors({ body: 'Hello {{nmae}}' })).toEqual([
      {
        field: 'body',
        message: 'unknown variable "nmae" (line 1, column 7); known: name, reward, points, staff_note',
        line: 1,
        column: 7,
      },
    ]);
    // The place is counted in the field's own lines.
    expect(errors({ body: 'Hello {{name}},\n\n  Your {{rewrd}} is ready.' })).toEqual([
      expect.objectContaining({ field: 'body', line: 3, column: 8 }),
    ]);
    expect(errors({ subject: '{{code}}' }, 'points_expiring')[0]).toMatchObject({ field: 'subject' });
    expect(errors({ body: '{{#if balance}}x{{/if}}' })[0]!.message).toMatch(/unknown variable "balance"/);
  });
  it('refuses triple braces, partials, helpers, paths and data variables', () => {
    const messages = (body: string) => errors({ body }).map((e) => e.message);
    expect(messages('{{{name}}}')[0]).toMatch(/triple braces/);
    expect(messages('{{> footer}}')[0]).toMatch(/partial is not allowed/);
    expect(messages('{{lookup name "x"}}')[0]).toMatch(/helpers and parameters/);
    expect(messages('{{#each name}}x{{/each}}')[0]).toMatch(/only \{\{#if variable\}\}/);
    expect(messages('{{name.length}}')[0]).toMatch(/not a variable name/);
    expect(messages('{{../name}}')[0]).toMatch(/not a variable name/);
    expect(messages('{{@root}}')[0]).toMatch(/not a variable name/);
    expect(messages('{{this}}')[0]).toMatch(/not a variable name/);
    expect(messages('{{constructor}}')[0]).toMatch(/unknown variable/);
  });
  it('refuses syntax errors, empty and multi-line subjects, and over-long texts', () => {
    expect(errors({ body: 'Hello {{name' })[0]!.message).toMatch(/^syntax error/);
    expect(errors({ body: 'Hello,\n\nsee {{#if name}}x{{/if}} and {{name' })[0]).toMatchObject({
      field: 'body',
      line: 3,
      message: expect.stringMatching(/^syntax error on line 3: expected /),
    });
    expect(errors({ body: '{{#if name}}x' })[0]!.message).toMatch(/syntax error|doesn't match/);
    expect(errors({ subject: '  ' })).toEqual([{ field: 'subject', message: 'must not be empty' }]);
    expect(errors({ subject: 'a\nb' })).toEqual([{ field: 'subject', message: 'must be one line' }]);
    expect(errors({ body: 'x'.repeat(5_001) })).toEqual([{ field: 'body', message: 'at most 5000 characters' }]);
  });
});

describe("a tenant's own template", () => {
  const own = {
    subject: 'Bravo {{name}} : {{reward}}',
    body: 'Bonjour {{name}},\n\n« {{reward}} » est à vous.{{#if staff_note}}\nMot de l’équipe : {{staff_note}}{{/if}}',
  };
  const vars = { name: 'Ana <b>Silva</b>', reward: 'Café & <script>x</script>', points: '1 200', staff_note: '' };

  it('is rendered instead of the default, in the layout, with member text escaped in HTML', async () => {
    expect(validateTemplate('claim_approved', own)).toEqual([]);
    const mail = await renderMail({ kind: 'claim_approved', locale: 'fr', vars, branding, template: own });
    expect(mail.subject).toBe('Bravo Ana <b>Silva</b> : Café & <script>x</script>');
    expect(mail.text).toMatch(/^Bonjour Ana <b>Silva<\/b>,\n\n« Café & <script>x<\/script> » est à vous\.\n/);
    expect(mail.html).not.toContain('<script>x');
    expect(mail.html).not.toContain('<b>Silva');
    expect(mail.html).toContain('Café &amp; &lt;script&gt;x&lt;/script&gt;');
    expect(mail.html).toContain('Ana &lt;b&gt;Silva&lt;/b&gt;');
    expect(mail.html).toContain('lang="fr" dir="ltr"');
    expect(mail.html).toContain('Café Atlas');
    // Without a template: the default of the kind and language.
    const plain = await renderMail({ kind: 'claim_approved', locale: 'fr', vars, branding });
    expect(plain.subject).toBe('Votre demande de récompense a été acceptée');
  });

  it('names the same kinds as the contract', async () => {
    const { MAIL_KINDS: contractKinds } = await import('@loyalty/contracts');
    expect([...contractKinds]).toEqual([...MAIL_KINDS]);
  });
});
