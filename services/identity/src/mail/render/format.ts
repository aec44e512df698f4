/**
 * Numbers, money and dates as a member reads them: formatted with `Intl` for the mail's locale
 * and, for instants, the card's time zone (UTC when the event names none). Date-only values
 * (`YYYY-MM-DD`, an expiry day) are days, not instants: they are shown as that day whatever the zone.
 */
export const LOCALES = ['en', 'fr', 'ar'] as const;
export type Locale = (typeof LOCALES)[number];

export function isLocale(v: unknown): v is Locale {
  return LOCALES.some((l) => l === v);
}

/** Arabic is written right to left. */
export function direction(locale: Locale): 'ltr' | 'rtl' {
  return locale === 'ar' ? 'rtl' : 'ltr';
}

const numberFormats = new Map<string, Intl.NumberFormat>();
const dateFormats = new Map<string, Intl.DateTimeFormat>();

function cached<T>(map: Map<string, T>, key: string, make: () => T): T {
  let f = map.get(key);
  if (!f) {
    f = make();
    map.set(key, f);
  }
  return f;
}

/** A zone `Intl` knows, else UTC (an event from an older ledger, a mistyped zone). */
function zoneOf(timeZone: string | undefined): string {
  if (!timeZone) return 'UTC';
  try {
    new Intl.DateTimeFormat('en', { timeZone });
    return timeZone;
  } catch {
    return 'UTC';
  }
}

export class Formatter {
  readonly timeZone: string;
  constructor(
    readonly locale: Locale,
    timeZone?: string,
  ) {
    this.timeZone = zoneOf(timeZone);
  }

  /** An integer or decimal count (points, purchases). */
  number(v: unknown): string {
    const n = Number(v ?? 0);
    if (!Number.isFinite(n)) return '';
    return cached(numberFormats, `n ${this.locale}`, () => new Intl.NumberFormat(this.locale)).format(n);
  }

  /** An amount of money in its currency (ISO 4217); a code Intl does not know shows as the number and the code. */
  money(amount: unknown, currency: unknown): string {
    const n = Number(amount ?? 0);
    const code = typeof currency === 'string' && /^[A-Z]{3}$/.test(currency) ? currency : '';
    if (!Number.isFinite(n)) return '';
    if (!code) return this.number(n);
    try {
      return cached(
        numberFormats,
        `m ${this.locale} ${code}`,
        () => new Intl.NumberFormat(this.locale, { style: 'currency', currency: code }),
      ).format(n);
    } catch {
      return `${this.number(n)} ${code}`;
    }
  }

  /** A day (`YYYY-MM-DD`) or an instant (ISO 8601 or a Date, shown as its day in the card's zone). */
  date(v: unknown): string {
    if (v === null || v === undefined || v === '') return '';
    const dayOnly = typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v);
    // A day is shown as that day: noon UTC of it, formatted in UTC.
    const at = v instanceof Date ? v : new Date(dayOnly ? `${String(v)}T12:00:00Z` : String(v));
    if (Number.isNaN(at.getTime())) return '';
    const zone = dayOnly ? 'UTC' : this.timeZone;
    return cached(
      dateFormats,
      `d ${this.locale} ${zone}`,
      () => new Intl.DateTimeFormat(this.locale, { dateStyle: 'long', timeZone: zone }),
    ).format(at);
  }
}
