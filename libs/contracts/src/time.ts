/**
 * Dates and times given as text (import files, rule conditions, a manual tier's end, query
 * filters, export ranges): an ISO 8601 date `2024-03-01` or a time on it `2024-03-01T10:00:00Z`
 * (seconds and their fraction optional; `Z` or an offset `+01:00`/`+0100`; a space instead of the
 * `T`). A time must carry its offset, as RFC 3339's date-time does: without one, JavaScript reads
 * it in the server's own time zone, so the same text would name another instant on another
 * server. The date must be one of the calendar (years 0001 to 9999): JavaScript's `Date` moves
 * 2022-02-30 to March 2, reads year 0 and years of six digits, and takes `2024-03-01junk` for a day
 * in June, so it never decides alone.
 */

const ISO_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?([Zz]|[+-](\d{2}):?(\d{2}))?)?$/;

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/** The days of `month` (1 to 12) in `year` (Gregorian). */
function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** The form of a date or time, as reasons name it. */
export const ISO_TIME_FORM = 'an ISO 8601 date (2024-03-01) or time (2024-03-01T10:00:00Z)';
const MUST = `must be ${ISO_TIME_FORM}`;

/**
 * The instant `text` stands for (a date alone: its start, UTC), or why it stands for none: not a
 * date or time of the form above, a time without its offset, or one the calendar does not have
 * (day 30 of February, month 13, year 0000, hour 24, minute 60, an offset of 24 hours).
 */
export function readIsoTime(text: string): { at: Date } | { problem: string } {
  const m = ISO_TIME.exec(text);
  if (!m) {
    const far = /^[+-]\d{5,6}-/.test(text) || /^\d{5,}-/.test(text);
    return { problem: far ? `${MUST}; years run from 0001 to 9999` : MUST };
  }
  const [, y, mo, d, h, mi, s, zone, zh, zm] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (year === 0) return { problem: 'has year 0000: years run from 0001 to 9999' };
  if (month < 1 || month > 12) return { problem: `has month ${mo}: months run from 01 to 12` };
  if (day < 1 || day > daysIn(year, month))
    return { problem: `has day ${d} of ${MONTHS[month - 1]} ${y}, which has ${daysIn(year, month)} days` };
  if (h !== undefined && (Number(h) > 23 || Number(mi) > 59 || Number(s ?? 0) > 59))
    return { problem: `has the time ${h}:${mi}${s === undefined ? '' : `:${s}`}, which a day does not have` };
  if (zh !== undefined && (Number(zh) > 23 || Number(zm) > 59))
    return { problem: `has the offset ${zone}, which is not one (at most 23:59 either way)` };
  if (h !== undefined && zone === undefined) return { problem: `${MUST} with its offset (Z or +01:00)` };
  const at = new Date(h === undefined ? `${y}-${mo}-${d}T00:00:00Z` : text);
  // Only a form the engine reads differently from the standard would get here; refuse it rather than guess.
  if (Number.isNaN(at.getTime())) return { problem: MUST };
  return { at };
}

/** The instant of a valid date or time (see `readIsoTime`), else undefined. */
export function parseIsoTime(text: string): Date | undefined {
  const read = readIsoTime(text);
  return 'at' in read ? read.at : undefined;
}
