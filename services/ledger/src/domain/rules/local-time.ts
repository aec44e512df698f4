/**
 * Wall-clock time in a card's IANA time zone, through the Intl API (the ICU time-zone database
 * Node ships): the day, weekday and minute of an instant there, and the calendar period it falls
 * in. Periods are named by local calendar dates, never by adding hours to an instant, so a day
 * that is 23 or 25 hours long (a DST change) is still one day.
 */

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

export const PERIODS = ['day', 'week', 'month', 'year', 'lifetime'] as const;
export type Period = (typeof PERIODS)[number];

export interface LocalTime {
  year: number;
  month: number;
  day: number;
  weekday: Weekday;
  /** Minutes since local midnight (0..1439). */
  minute: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      weekday: 'short',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Whether `timeZone` is an IANA time-zone name this runtime knows. */
export function isTimeZone(timeZone: string): boolean {
  try {
    formatter(timeZone);
    return true;
  } catch {
    return false;
  }
}

/**
 * The last answer per zone, by UTC minute: a wall clock to the minute is the same for every instant
 * of a UTC minute wherever offsets are whole minutes, as every zone's have been since 1972 (some
 * local mean times before had seconds), so earns of the same minute format the instant once.
 */
const lastByZone = new Map<string, { minute: number; local: LocalTime }>();
const WHOLE_MINUTE_OFFSETS_SINCE = Date.UTC(1973, 0, 1);

/** The instant `at` as a wall clock in `timeZone`. */
export function localTime(at: Date, timeZone: string): LocalTime {
  const ms = at.getTime();
  if (ms < WHOLE_MINUTE_OFFSETS_SINCE) return wallClock(at, timeZone);
  const minute = Math.floor(ms / 60_000);
  const last = lastByZone.get(timeZone);
  if (last !== undefined && last.minute === minute) return last.local;
  const local = wallClock(at, timeZone);
  if (lastByZone.size > 1000) lastByZone.clear();
  lastByZone.set(timeZone, { minute, local });
  return local;
}

function wallClock(at: Date, timeZone: string): LocalTime {
  const parts: Record<string, string> = {};
  for (const p of formatter(timeZone).formatToParts(at)) parts[p.type] = p.value;
  const weekday = WEEKDAYS.find((w) => w === (parts.weekday ?? '').slice(0, 3).toLowerCase());
  if (weekday === undefined) throw new Error(`no weekday for ${at.toISOString()} in ${timeZone}`);
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    weekday,
    minute: Number(parts.hour) * 60 + Number(parts.minute),
  };
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/**
 * The name of the period of `at` in `timeZone`: `2026-03-29` (day), `w2026-03-23` (the week's
 * Monday), `2026-03` (month), `2026` (year), `lifetime`.
 */
export function periodKey(period: Period, at: Date, timeZone: string): string {
  if (period === 'lifetime') return 'lifetime';
  const t = localTime(at, timeZone);
  if (period === 'year') return pad(t.year, 4);
  if (period === 'month') return `${pad(t.year, 4)}-${pad(t.month)}`;
  if (period === 'day') return `${pad(t.year, 4)}-${pad(t.month)}-${pad(t.day)}`;
  // The local date as a UTC calendar date, moved back to its Monday: pure calendar arithmetic.
  const monday = new Date(Date.UTC(t.year, t.month - 1, t.day - WEEKDAYS.indexOf(t.weekday)));
  return `w${monday.toISOString().slice(0, 10)}`;
}

/** `HH:MM` -> minutes since midnight (the contract checked the form). */
export function minuteOfDay(hhmm: string): number {
  const [h, m] = hhmm.split(':');
  return Number(h) * 60 + Number(m);
}
