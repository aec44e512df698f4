import { AppError, readIsoTime, type OperationInput, type OperationOutput } from '@loyalty/contracts';
import type { reportOperations } from '@loyalty/contracts';
import type { Clock, Pool } from '@loyalty/runtime';
import { decimalNumber, fromCents, parseDecimal } from '../domain/money.ts';
import { findCard } from '../store/cards.ts';
import { activeDelta } from './rollups.ts';

type ReportOp = (typeof reportOperations)['cards.report'];
type Report = OperationOutput<ReportOp>;
type Granularity = 'day' | 'week' | 'month';

/** How the report reads each journal label (unknown labels are adjustments, signed). */
const ISSUED = new Set(['cashback_earned', 'staff_added_points', 'referral_bonus', 'event_bonus', 'balance_imported']);
const REDEEMED = new Set(['cashback_redeemed', 'staff_redeemed_reward', 'reward_claimed']);
const EXPIRED = new Set(['points_expired', 'cashback_expired']);
const REFUNDED = new Set(['points_refunded', 'cashback_refunded']);
export type Category = 'issued' | 'redeemed' | 'expired' | 'refunded' | 'adjusted';
export function categoryOf(event: string): Category {
  if (ISSUED.has(event)) return 'issued';
  if (REDEEMED.has(event)) return 'redeemed';
  if (EXPIRED.has(event)) return 'expired';
  if (REFUNDED.has(event)) return 'refunded';
  return 'adjusted';
}

/** At most this many periods in one report (three years of days). */
const MAX_PERIODS = 1100;

/** The sums of a category, in the card's unit (cents or points); `net` is signed. */
interface Sums {
  issued: bigint;
  redeemed: bigint;
  expired: bigint;
  refunded: bigint;
  adjusted: bigint;
}
const zero = (): Sums => ({ issued: 0n, redeemed: 0n, expired: 0n, refunded: 0n, adjusted: 0n });

function addTo(s: Sums, event: string, net: bigint): void {
  const c = categoryOf(event);
  // Issued and adjusted keep their sign; the others are debits, shown as positive amounts.
  s[c] += c === 'issued' || c === 'adjusted' ? net : -net;
}

/*
 * Days are those of the calendar the whole API uses, years 0001 to 9999 (as exports), each exactly:
 * `Date.UTC` and `new Date(y, m, d)` read a year 0 to 99 as 1900 to 1999, so no day here is ever
 * built from a year number that way (setUTCFullYear, setUTCMonth and ISO text are exact).
 */
const DAY = /^\d{4}-\d{2}-\d{2}$/;
/** The first day there is (a default `from` 29 days before an earlier `to` starts here). */
const FIRST_DAY = new Date('0001-01-01T00:00:00Z');
function parseDay(text: string, field: string): Date {
  const read = DAY.test(text) ? readIsoTime(text) : { problem: 'must be a date YYYY-MM-DD' };
  if ('problem' in read)
    throw new AppError('validation_error', `Invalid request: ${field}.`, {
      fields: [{ field, message: read.problem }],
    });
  return read.at;
}
const dayText = (d: Date) => d.toISOString().slice(0, 10);
const addDays = (d: Date, n: number) => new Date(d.getTime() + n * 86_400_000);
/** January 1 of `year`, exactly (Date.UTC would move years 0 to 99 to the 1900s). */
function newYear(year: number): Date {
  const d = new Date(0);
  d.setUTCFullYear(year, 0, 1);
  return d;
}

/** The first day of the period holding `d` (weeks start on Monday). */
export function periodStart(d: Date, g: Granularity): Date {
  if (g === 'day') return d;
  if (g === 'week') return addDays(d, -((d.getUTCDay() + 6) % 7));
  const first = new Date(d.getTime());
  first.setUTCDate(1);
  return first;
}
function nextPeriod(d: Date, g: Granularity): Date {
  if (g === 'day') return addDays(d, 1);
  if (g === 'week') return addDays(d, 7);
  const next = new Date(d.getTime());
  next.setUTCMonth(next.getUTCMonth() + 1, 1);
  return next;
}

/** Today in a time zone, as YYYY-MM-DD. */
function todayIn(timeZone: string, now: Date): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(now);
}

const ratio = (a: bigint, b: bigint) => (b === 0n ? null : Math.round((Number(a) / Number(b)) * 1e6) / 1e6);

/** The days and periods a report covers, checked. */
function rangeOf(input: OperationInput<ReportOp>, timeZone: string, now: Date) {
  const g = input.granularity;
  const to = parseDay(input.to ?? todayIn(timeZone, now), 'to');
  const defaultFrom = addDays(to, -29);
  const from =
    input.from !== undefined ? parseDay(input.from, 'from') : defaultFrom < FIRST_DAY ? FIRST_DAY : defaultFrom;
  const refuse = (message: string) =>
    new AppError('validation_error', 'Invalid request: from.', { fields: [{ field: 'from', message }] });
  if (from > to) throw refuse('must not be after to');
  const starts: Date[] = [];
  for (let p = periodStart(from, g); p <= to; p = nextPeriod(p, g)) {
    starts.push(p);
    if (starts.length > MAX_PERIODS) throw refuse(`at most ${MAX_PERIODS} periods in one report`);
  }
  return { g, from, to, starts };
}

/** The rollups of a range plus the deltas not folded yet (`rows` is the rollups' or the deltas' own). */
const both = (rollup: string, delta: string) => `(${rollup} UNION ALL ${delta})`;

/** The sums a report needs, read from the rollups and the unfolded deltas. */
async function readSums(pool: Pool, cardId: number, range: { g: Granularity; from: Date; to: Date; starts: Date[] }) {
  const args = [cardId, dayText(range.from), dayText(range.to)];
  const inRange = 'card_id = $1 AND day BETWEEN $2 AND $3';
  const period = `date_trunc('${range.g}', day)::date`;
  const redeemed = 'reward_id <> 0 AND event = ANY($4)';
  return Promise.all([
    pool.query<{ period: Date; event: string; net: string }>(
      `SELECT ${period} AS period, event, sum(net)::text AS net FROM ${both(
        `SELECT day, event, credits + debits AS net FROM ledger.report_days WHERE ${inRange}`,
        `SELECT day, event, amount FROM ledger.report_deltas WHERE ${inRange}`,
      )} x GROUP BY 1, 2`,
      args,
    ),
    readActive(pool, cardId, range),
    pool.query<{ balance: string | null }>(
      `SELECT (coalesce((SELECT sum(credits + debits) FROM ledger.report_days WHERE card_id = $1 AND day <= $2), 0)
             + coalesce((SELECT sum(amount) FROM ledger.report_deltas WHERE card_id = $1 AND day <= $2), 0))::text AS balance`,
      [cardId, dayText(range.to)],
    ),
    pool.query<{ reward_id: string; name: string | null; redemptions: string; amount: string }>(
      `SELECT x.reward_id::text, r.name, sum(x.n)::text AS redemptions, (-sum(x.net))::text AS amount FROM ${both(
        `SELECT reward_id, entries AS n, credits + debits AS net FROM ledger.report_days WHERE ${inRange} AND ${redeemed}`,
        `SELECT reward_id, 1, amount FROM ledger.report_deltas WHERE ${inRange} AND ${redeemed}`,
      )} x LEFT JOIN ledger.rewards r ON r.id = x.reward_id
       GROUP BY x.reward_id, r.name ORDER BY sum(x.n) DESC, x.reward_id LIMIT 10`,
      [...args, [...REDEEMED]],
    ),
  ]);
}

/** The last day of the period starting on `start`. */
const periodEnd = (start: Date, g: Granularity) => addDays(nextPeriod(start, g), -1);

/**
 * The members active in each period and in the whole range, from the active-member rollups
 * (migration 57) plus the deltas not folded yet, never from members x days: a period the range
 * covers whole is one row of `report_active_counts` (plus the members its unfolded deltas add); the
 * range itself and a period it covers in part (its first or last) are one row per member and year
 * of `report_active_years`, the member's active days, tested against the days of the range.
 */
async function readActive(
  pool: Pool,
  cardId: number,
  range: { g: Granularity; from: Date; to: Date; starts: Date[] },
): Promise<{ byPeriod: Map<string, number>; total: number }> {
  const { g, from, to } = range;
  const whole: string[] = [];
  // The range itself first, then the periods it covers in part.
  const parts = { keys: ['total'], lo: [dayText(from)], hi: [dayText(to)] };
  for (const p of range.starts) {
    const end = periodEnd(p, g);
    if (p >= from && end <= to) whole.push(dayText(p));
    else {
      parts.keys.push(dayText(p));
      parts.lo.push(dayText(p < from ? from : p));
      parts.hi.push(dayText(end > to ? to : end));
    }
  }
  // A member of an unfolded delta counts in a whole period unless the rollups have it already.
  const known =
    g === 'day'
      ? 'SELECT 1 FROM ledger.report_active m WHERE m.card_id = $1 AND m.day = d.day AND m.member_id = d.member_id'
      : 'SELECT 1 FROM ledger.report_active_periods m WHERE m.card_id = $1 AND m.period = $2 AND m.start = d.start AND m.member_id = d.member_id';
  const [wholeRows, partRows] = await Promise.all([
    pool.query<{ start: Date; n: string }>(
      `SELECT start, sum(n)::text AS n FROM (
         SELECT start, members AS n FROM ledger.report_active_counts
          WHERE card_id = $1 AND period = $2 AND start = ANY($3::date[])
         UNION ALL
         SELECT d.start, count(DISTINCT d.member_id) FROM (
           SELECT date_trunc($2, day::timestamp)::date AS start, day, member_id FROM ledger.report_deltas
            WHERE card_id = $1 AND day BETWEEN $4 AND $5 AND ${activeDelta()}) d
          WHERE d.start = ANY($3::date[]) AND NOT EXISTS (${known})
          GROUP BY d.start) x
       GROUP BY start`,
      [cardId, g, whole, dayText(from), dayText(to)],
    ),
    membersBetween(pool, cardId, parts),
  ]);
  const byPeriod = new Map(wholeRows.rows.map((r) => [dayText(r.start), Number(r.n)]));
  partRows.forEach((n, i) => {
    const key = parts.keys[i];
    if (i > 0 && key !== undefined) byPeriod.set(key, n);
  });
  return { byPeriod, total: partRows[0] ?? 0 };
}

const yearOf = (d: Date) => d.getUTCFullYear();
const dayOfYear = (d: Date) => Math.round((d.getTime() - newYear(d.getUTCFullYear()).getTime()) / 86_400_000);

/** The bits of the days from `lo` to `hi` that fall in `year` (bit n: day of the year n + 1), as text. */
function yearMask(year: number, lo: Date, hi: Date): string {
  if (year < yearOf(lo) || year > yearOf(hi)) return '0'.repeat(366);
  const first = yearOf(lo) < year ? 0 : dayOfYear(lo);
  const last = yearOf(hi) > year ? 365 : dayOfYear(hi);
  return '0'.repeat(first) + '1'.repeat(last - first + 1) + '0'.repeat(365 - last);
}

/**
 * How many members were active in each range of days (at most three: the report's range, its first
 * and its last period when partly covered): the members whose days of the year meet the range's
 * (one row per member and year: no de-duplication at all when the ranges lie in one year), plus
 * the members of unfolded deltas in the range that the rollups do not show active in it.
 */
async function membersBetween(pool: Pool, cardId: number, parts: { lo: string[]; hi: string[] }): Promise<number[]> {
  const ranges = parts.lo.map((lo, i) => ({
    lo: new Date(`${lo}T00:00:00Z`),
    hi: new Date(`${parts.hi[i]}T00:00:00Z`),
  }));
  const y0 = Math.min(...ranges.map((r) => yearOf(r.lo)));
  const y1 = Math.max(...ranges.map((r) => yearOf(r.hi)));
  const years = Array.from({ length: y1 - y0 + 1 }, (_, i) => y0 + i);
  // Parameter 4 + k: range k's mask of each year, indexed by year - y0 + 1.
  const masks = ranges.map((r) => years.map((y) => yearMask(y, r.lo, r.hi)));
  const hit = (k: number) => `bit_count(days & ($${4 + k}::bit(366)[])[year - $2 + 1]) > 0`;
  const counted = ranges.map((_, k) => `count(*) FILTER (WHERE k${k})::text AS k${k}`).join(', ');
  const sql =
    years.length === 1
      ? `SELECT ${counted} FROM (SELECT ${ranges.map((_, k) => `${hit(k)} AS k${k}`).join(', ')}
           FROM ledger.report_active_years WHERE card_id = $1 AND year BETWEEN $2 AND $3) x`
      : `SELECT ${counted} FROM (SELECT ${ranges.map((_, k) => `bool_or(${hit(k)}) AS k${k}`).join(', ')}
           FROM ledger.report_active_years WHERE card_id = $1 AND year BETWEEN $2 AND $3 GROUP BY member_id) x`;
  const params = [cardId, y0, y1, ...masks];
  const [rollups, deltas] = await Promise.all([
    pool.query<Record<string, string>>(sql, params),
    pool.query<{ k: number; n: string }>(
      `SELECT r.k, count(DISTINCT d.member_id)::text AS n
         FROM unnest($2::date[], $3::date[]) WITH ORDINALITY AS r (lo, hi, k)
         JOIN ledger.report_deltas d ON d.card_id = $1 AND d.day BETWEEN r.lo AND r.hi
        WHERE ${activeDelta('d')} AND NOT EXISTS (
          SELECT 1 FROM ledger.report_active_years a
           WHERE a.card_id = $1 AND a.member_id = d.member_id AND a.year = ANY($4::int[])
             AND bit_count(a.days & ($5::bit(366)[])[r.k::int][a.year - $6 + 1]) > 0)
        GROUP BY r.k`,
      [cardId, parts.lo, parts.hi, years, masks, y0],
    ),
  ]);
  const row = rollups.rows[0] ?? {};
  const unfolded = new Map(deltas.rows.map((r) => [Number(r.k), Number(r.n)]));
  return ranges.map((_, k) => Number(row[`k${k}`] ?? 0) + (unfolded.get(k + 1) ?? 0));
}

/** The sums of each period and of the whole range, by category. */
function sumsByPeriod(rows: { period: Date; event: string; net: string }[]) {
  const byPeriod = new Map<string, Sums>();
  const totals = zero();
  for (const row of rows) {
    const s = byPeriod.get(dayText(row.period)) ?? zero();
    byPeriod.set(dayText(row.period), s);
    addTo(s, row.event, BigInt(row.net));
    addTo(totals, row.event, BigInt(row.net));
  }
  return { byPeriod, totals };
}

/** The programme report of a card (contract `cards.report`), from the rollups and the unfolded deltas. */
export async function programmeReport(
  pool: Pool,
  clock: Clock,
  tenantId: number,
  input: OperationInput<ReportOp>,
): Promise<Report> {
  const card = await findCard(pool, tenantId, input.card_id);
  if (!card) throw new AppError('card_not_found');
  const range = rangeOf(input, card.time_zone, clock.now());
  const [sums, active, outstanding, rewards] = await readSums(pool, card.id, range);
  const { byPeriod, totals } = sumsByPeriod(sums.rows);
  const activeBy = active.byPeriod;
  const unit = (v: bigint) => (card.reward_system === 'cashback' ? fromCents(Number(v)) : Number(v));
  const figures = (s: Sums) => ({
    issued: unit(s.issued),
    redeemed: unit(s.redeemed),
    expired: unit(s.expired),
    refunded: unit(s.refunded),
    adjusted: unit(s.adjusted),
  });
  const balance = BigInt(outstanding.rows[0]?.balance ?? '0'),
    points = card.reward_system === 'points';
  return {
    card_id: card.id,
    reward_system: card.reward_system,
    currency: card.currency,
    time_zone: card.time_zone,
    from: dayText(range.from),
    to: dayText(range.to),
    granularity: range.g,
    periods: range.starts.map((p) => ({
      start: dayText(p),
      ...figures(byPeriod.get(dayText(p)) ?? zero()),
      active_members: activeBy.get(dayText(p)) ?? 0,
    })),
    totals: {
      ...figures(totals),
      active_members: active.total,
      breakage: ratio(totals.expired, totals.issued),
      redemption_rate: ratio(totals.redeemed, totals.issued),
    },
    outstanding: {
      balance: unit(balance),
      liability: points ? liability(balance, card.point_value) : unit(balance),
      point_value: points && card.point_value !== null ? decimalNumber(parseDecimal(card.point_value)) : null,
    },
    top_rewards: rewards.rows.map((r) => ({
      reward_id: Number(r.reward_id),
      name: r.name ?? '',
      redemptions: Number(r.redemptions),
      amount: unit(BigInt(r.amount)),
    })),
  };
}

/** points × point_value, rounded half-up to the cent; null without a point value. */
function liability(points: bigint, pointValue: string | null): number | null {
  if (pointValue === null) return null;
  const v = parseDecimal(pointValue);
  const scaled = points * v.units; // scale v.scale
  const cents =
    v.scale >= 2
      ? (scaled * 2n + 10n ** BigInt(v.scale - 2)) / (2n * 10n ** BigInt(v.scale - 2))
      : scaled * 10n ** BigInt(2 - v.scale);
  return fromCents(Number(cents));
}
