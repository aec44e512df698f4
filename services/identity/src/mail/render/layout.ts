import mjml2html from 'mjml';
import { direction, type Locale } from './format.ts';

/**
 * The HTML around a message: the tenant's branding (name, logo, colours, footer) in a responsive
 * layout written in MJML, which turns it into the table markup mail clients need (Outlook's
 * conditional comments, a mobile stacking column, inlined styles) — a maintained library instead
 * of hand-written tables. Compiling MJML costs milliseconds, so a layout is compiled once per
 * branding, locale and kind of footer and kept; each mail only fills the placeholders of the
 * compiled HTML with its escaped title, paragraphs and unsubscribe link (layout cost per mail:
 * a few string replacements; docs/decisions/mail.md has the figures).
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

// Placeholders the compiled HTML keeps verbatim (MJML copies text content as it is).
const TITLE = '%%LOYALTY_TITLE%%';
const BODY = '%%LOYALTY_BODY%%';
const UNSUBSCRIBE = '%%LOYALTY_UNSUBSCRIBE%%';

function source(b: Branding, locale: Locale, marketing: boolean, why: string, unsubscribe: string): string {
  const dir = direction(locale);
  const align = dir === 'rtl' ? 'right' : 'left';
  const primary = hex(b.primary_color, DEFAULT_PRIMARY);
  const background = hex(b.background_color, DEFAULT_BACKGROUND);
  const header = b.logo_url
    ? `<mj-image src="${escapeHtml(b.logo_url)}" alt="${escapeHtml(b.name)}" width="160px" align="center" padding="8px" />`
    : `<mj-text align="center" color="#ffffff" font-size="22px" font-weight="bold">${escapeHtml(b.name)}</mj-text>`;
  // Each line in its own direction (a Latin address in an Arabic mail keeps its order).
  const footerLines = [b.name, b.postal_address, b.contact]
    .filter((l): l is string => !!l)
    .map((l) => `<span dir="auto">${escapeHtml(l)}</span>`);
  const footer = footerLines.join('<br />');
  const unsubscribeBlock = marketing
    ? `<mj-text align="${align}" css-class="muted" font-size="12px" color="#666666">${escapeHtml(why)} <a href="${UNSUBSCRIBE}" style="color:${primary}">${escapeHtml(unsubscribe)}</a></mj-text>`
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
  <mj-body background-color="${background}" width="600px">
    <mj-section background-color="${primary}" padding="16px">
      <mj-column>${header}</mj-column>
    </mj-section>
    <mj-section background-color="#ffffff" css-class="card" padding="24px 16px">
      <mj-column>
        <mj-text align="${align}" css-class="message">${BODY}</mj-text>
      </mj-column>
    </mj-section>
    <mj-section padding="16px">
      <mj-column>
        <mj-text align="center" css-class="muted" font-size="12px" color="#666666">${footer}</mj-text>
        ${unsubscribeBlock}
      </mj-column>
    </mj-section>
  </mj-body>
</mjml>`;
}

const layouts = new Map<string, Promise<string>>();
const LAYOUTS_MAX = 1_000;

/** The compiled layout of a branding, locale and footer: compiled once, then kept. */
export function layout(
  b: Branding,
  locale: Locale,
  marketing: boolean,
  words: { why: string; unsubscribe: string },
): Promise<string> {
  const key = JSON.stringify([b, locale, marketing]);
  const kept = layouts.get(key);
  if (kept) return kept;
  const html = mjml2html(source(b, locale, marketing, words.why, words.unsubscribe), {
    validationLevel: 'strict',
  }).then((r) => {
    if (r.errors.length > 0) throw new Error(`mail layout: ${r.errors.map((e) => e.formattedMessage).join('; ')}`);
    return r.html;
  });
  html.catch(() => layouts.delete(key));
  if (layouts.size >= LAYOUTS_MAX) layouts.clear();
  layouts.set(key, html);
  return html;
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
