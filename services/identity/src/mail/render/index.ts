import { catalog, phrases, type MailKindName, type TemplateText } from './catalog.ts';
import { Formatter, type Locale } from './format.ts';
import { fill, layout, type Branding } from './layout.ts';
import { compile, type Vars } from './template.ts';

export { catalog, isMailKind, MAIL_KINDS, phrases, type MailKindName, type TemplateText } from './catalog.ts';
export { Formatter, LOCALES, isLocale, direction, type Locale } from './format.ts';
export { DEFAULT_BACKGROUND, DEFAULT_PRIMARY, defaultBranding, escapeHtml, type Branding } from './layout.ts';
export { validateTemplate, type TemplateError, type Vars } from './template.ts';

export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

export interface RenderInput {
  kind: MailKindName;
  locale: Locale;
  vars: Vars;
  branding: Branding;
  /** The tenant's own template of this kind and locale; the default when none. */
  template?: TemplateText | undefined;
  /** A marketing mail's one-click unsubscribe link (its footer says why the member gets it). */
  unsubscribeUrl?: string | undefined;
}

/** The text footer: the tenant's name and address lines, then a marketing mail's unsubscribe. */
function textFooter(b: Branding, locale: Locale, unsubscribeUrl: string | undefined): string {
  const lines = [b.postal_address, b.contact].filter((l): l is string => !!l);
  const brand = lines.length > 0 ? `\n--\n${[b.name, ...lines].join('\n')}\n` : '';
  const unsubscribe = unsubscribeUrl ? `\n--\n${phrases[locale].unsubscribeLine(unsubscribeUrl)}\n` : '';
  return brand + unsubscribe;
}

/**
 * One message: the template (the tenant's, else the default) filled with `vars` (text already
 * flattened and formatted for the locale), as a subject, a plain-text part and the branded HTML
 * part.
 */
export async function renderMail(input: RenderInput): Promise<RenderedMail> {
  const t = input.template ?? catalog[input.kind].defaults[input.locale];
  const subject = compile(t.subject)(input.vars).replace(/\s+/g, ' ').trim();
  const body = compile(t.body)(input.vars)
    .replace(/[ \t]+\n/g, '\n')
    .trim();
  const marketing = input.unsubscribeUrl !== undefined;
  const compiled = layout(input.branding, input.locale, marketing);
  return {
    subject,
    text: `${body}\n${textFooter(input.branding, input.locale, input.unsubscribeUrl)}`,
    html: fill(compiled, subject, body, input.unsubscribeUrl),
  };
}

/** A kind's sample message (the console's preview, the snapshot tests). */
export function sampleVars(kind: MailKindName, locale: Locale): Vars {
  return catalog[kind].sample(new Formatter(locale, 'UTC'), locale);
}
