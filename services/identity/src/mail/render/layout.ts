import { phrases } from './catalog.ts';
import { compiledLayouts } from './compiled-layouts.ts';
import { direction, LOCALES, type Locale } from './format.ts';

/**
 * The HTML around a message: the tenant's branding (name, logo, colours, footer) in a responsive
 * layout written in MJML, which turns it into the table markup mail clients need (Outlook's
 * conditional comments, a mobile stacking column, inlined styles) — a maintained library instead
 * of hand-written tables. MJML is compiled when the project is built, once per locale, kind of
 * footer and header (logo or name); each mail only fills the placeholders of the compiled HTML
 * with the tenant's branding and its escaped title, paragraphs and unsubscribe link (a few string
 * replacements; docs/decisions/mail.md has the figures).
 */
export interface Branding {
  /** Shown at the top when there is no logo, and in the footer. */
  name: string;
  /** An https URL of the logo (shown 160 px wide at most), or none. */
  logo_url: string | null;
  /** Header band and links (#rrggbb). */
  primary_color: string;
  /** The page around the message (#rrggbb). */
  background_color: string;
  /** Footer lines: the merchant's postal address and how to reach them. */
  postal_address: string | null;
  contact: string | null;
}

export const DEFAULT_PRIMARY = '#1f4e79';
export const DEFAULT_BACKGROUND = '#f4f4f4';

export function defaultBranding(name: string): Branding {
  return {
    name,
    logo_url: null,
    primary_color: DEFAULT_PRIMARY,
    background_color: DEFAULT_BACKGROUND,
    postal_address: null,
    contact: null,
  };
}

/** Text made safe for HTML content and attribute values. */
export function escapeHtml(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const hex = (c: string, fallback: string) => (/^#[0-9a-fA-F]{6}$/.test(c) ? c : fallback);

// Placeholders the compiled HTML keeps verbatim (MJML copies text content and these attribute
// values as they are): a message's title, body and unsubscribe link, and the tenant's branding.
const TITLE = '%%LOYALTY_TITLE%%';
const BODY = '%%LOYALTY_BODY%%';
const UNSUBSCRIBE = '%%LOYALTY_UNSUBSCRIBE%%';
const NAME = '%%LOYALTY_NAME%%';
const LOGO = '%%LOYALTY_LOGO%%';
const FOOTER = '%%LOYALTY_FOOTER%%';
// Colours stand in as colours no layout uses (MJML reads them as colours and copies them).
const PRIMARY = '#0f1e2d';
const BACKGROUND = '#2d1e0f';

/** One layout to compile: a locale, whether a marketing footer follows, whether a logo heads it. */
export interface LayoutShape {
  locale: Locale;
  marketing: boolean;
  logo: boolean;
}

export const layoutKey = (s: LayoutShape): string =>
  `${s.locale}:${s.marketing ? 'marketing' : 'transactional'}:${s.logo ? 'logo' : 'name'}`;

/** Every shape a mail can take: what `npm run mail:layouts` compiles. */
export const LAYOUT_SHAPES: LayoutShape[] = LOCALES.flatMap((locale) =>
  [false, true].flatMap((marketing) => [false, true].map((logo) => ({ locale, marketing, logo }))),
);

/** The MJML of a layout shape, with placeholders where a tenant's branding and a message go. */
export function layoutSource({ locale, marketing, logo }: LayoutShape): string {
  const dir = direction(locale);
  const align = dir === 'rtl' ? 'right' : 'left';
  const words = phrases[locale];
  const header = logo
    ? `<mj-image src="${LOGO}" alt="${NAME}" width="160px" align="center" padding="8px" />`
    : `<mj-text align="center" color="#ffffff" font-size="22px" font-weight="bold">${NAME}</mj-text>`;
  const unsubscribeBlock = marketing
    ? `<mj-text align="${align}" css-class="muted" font-size="12px" color="#666666">${escapeHtml(words.why)} <a href="${UNSUBSCRIBE}" style="color:${PRIMARY}">${escapeHtml(words.unsubscribe)}</a></mj-text>`
    : '';
  return `<mjml lang="${locale}" dir="${dir}">
  <mj-head>
    <mj-title>${TITLE}</mj-title>
    <mj-attributes>
      <mj-all font-family="-apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif" />
      <mj-text font-size="16px" line-height="1.5" color="#222222" />
      <mj-section direction="${dir}" />
      <mj-column direction="${dir}" />
    </mj-attributes>
    <mj-raw><meta name="color-scheme" content="light dark" /><meta name="supported-color-schemes" content="light dark" /></mj-raw>
    <mj-style>
      @media (prefers-color-scheme: dark) {
        .card, .card table, .card td { background-color: #1e1e1e !important; }
        .card div, .muted div { color: #eeeeee !important; }
      }
    </mj-style>
  </mj-head>
  <mj-body background-color="${BACKGROUND}" width="600px">
    <mj-section background-color="${PRIMARY}" padding="16px">
      <mj-column>${header}</mj-column>
    </mj-section>
    <mj-section background-color="#ffffff" css-class="card" padding="24px 16px">
      <mj-column>
        <mj-text align="${align}" css-class="message">${BODY}</mj-text>
      </mj-column>
    </mj-section>
    <mj-section padding="16px">
      <mj-column>
        <mj-text align="center" css-class="muted" font-size="12px" color="#666666">${FOOTER}</mj-text>
        ${unsubscribeBlock}
      </mj-column>
    </mj-section>
  </mj-body>
</mjml>`;
}

/**
 * The HTML of a branding, locale and footer: the shape's layout, compiled from MJML when the
 * project is built (`compiled-layouts.ts`, written by `npm run mail:layouts`; a test checks it is
 * current), with the tenant's name, logo, colours and footer put in, escaped. So the service never
 * loads MJML (some 57 MB of resident memory) and no mail waits for a compilation.
 */
export function layout(b: Branding, locale: Locale, marketing: boolean): string {
  const key = JSON.stringify([b, locale, marketing]);
  let html = branded.get(key);
  if (html === undefined) {
    html = brand(b, locale, marketing);
    if (branded.size >= BRANDED_MAX) branded.clear();
    branded.set(key, html);
  }
  return html;
}

// A tenant's filled-in layouts are kept (a few KB each), so a mail costs only its own placeholders.
const branded = new Map<string, string>();
const BRANDED_MAX = 500;

function brand(b: Branding, locale: Locale, marketing: boolean): string {
  const compiled = compiledLayouts[layoutKey({ locale, marketing, logo: !!b.logo_url })];
  if (compiled === undefined) throw new Error(`mail layout: none compiled for ${locale}`);
  // Each line in its own direction (a Latin address in an Arabic mail keeps its order).
  const footer = [b.name, b.postal_address, b.contact]
    .filter((l): l is string => !!l)
    .map((l) => `<span dir="auto">${escapeHtml(l)}</span>`)
    .join('<br />');
  // Replacement functions: `$` in a value is not a replacement pattern.
  return compiled
    .replaceAll(PRIMARY, () => hex(b.primary_color, DEFAULT_PRIMARY))
    .replaceAll(BACKGROUND, () => hex(b.background_color, DEFAULT_BACKGROUND))
    .replaceAll(NAME, () => escapeHtml(b.name))
    .replaceAll(LOGO, () => escapeHtml(b.logo_url ?? ''))
    .replaceAll(FOOTER, () => footer);
}

/** The body's paragraphs (separated by a blank line) as HTML: escaped, single line breaks kept. */
export function paragraphs(text: string): string {
  return text
    .trim()
    .split(/\n[ \t]*\n/)
    .map((p) => `<p style="margin:0 0 16px 0">${escapeHtml(p.trim()).replace(/\n/g, '<br />')}</p>`)
    .join('');
}

/** A compiled layout with one message's title, body and unsubscribe link filled in. */
export function fill(html: string, title: string, bodyText: string, unsubscribeUrl: string | undefined): string {
  // Replacement functions: `$` in a value is not a replacement pattern.
  return html
    .replaceAll(TITLE, () => escapeHtml(title))
    .replace(BODY, () => paragraphs(bodyText))
    .replace(UNSUBSCRIBE, () => escapeHtml(unsubscribeUrl ?? ''));
}
