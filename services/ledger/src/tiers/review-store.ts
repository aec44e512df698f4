import type { Queryable } from '@loyalty/runtime';

/** The subjects of the events a tier review writes. */
export interface TierEventSubjects {
  renewed: string;
  downgraded: string;
  warning: string;
}

// The facts of a member's tier row as the reviews read them: the ladder's settings, the card's time
// zone and unit, the local day of valid_until, and what the member qualified with in the window that
// ends there (the window holding the day before it). `money`: the ladder counts cents.
const FACTS = `facts AS (
  SELECT m.card_id, m.member_id, m.tenant_id, m.rank, m.valid_until, m.joined_on, l.window_kind, l.window_days,
         l.validity_days, l.warning_days, c.time_zone, (l.metric = 'amount_spent' OR c.reward_system = 'cashback') AS money,
         (m.valid_until AT TIME ZONE c.time_zone)::date AS vday
    FROM due JOIN ledger.member_tiers m USING (card_id, member_id)
    JOIN ledger.tier_ladders l ON l.card_id = m.card_id JOIN ledger.cards c ON c.id = m.card_id
), judged AS (
  SELECT f.*, GREATEST(0, COALESCE((SELECT sum(d.amount) FROM ledger.tier_days d
           WHERE d.card_id = f.card_id AND d.member_id = f.member_id
             AND d.day >= ledger.tier_window_start(f.window_kind, f.window_days, f.vday - 1, f.joined_on)
             AND d.day < f.vday), 0))::bigint AS total,
         (SELECT min(t.rank) FROM ledger.tiers t WHERE t.card_id = f.card_id) AS lowest,
         (SELECT t FROM ledger.tiers t WHERE t.card_id = f.card_id AND t.rank <= f.rank ORDER BY t.rank DESC LIMIT 1) AS held
    FROM facts f
), decided AS (
  SELECT j.*, COALESCE((SELECT max(t.rank) FROM ledger.tiers t
           WHERE t.card_id = j.card_id AND t.rank <= j.rank AND t.retain_threshold <= j.total), j.lowest) AS to_rank
    FROM judged j
)`;

const ISO = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const UNITS = (row: string) =>
  `CASE WHEN ${row}.money THEN to_jsonb(round(${row}.total / 100.0, 2)) ELSE to_jsonb(${row}.total) END`;

/**
 * Review up to `limit` member tiers whose validity has ended, taken with FOR UPDATE SKIP LOCKED
 * (every replica runs this; a reviewed row is no longer due, so each review happens once): the
 * tier is kept and renewed for one more period when the window judged met its retain threshold,
 * else the member moves to the highest tier whose retain threshold was met (the lowest holds with
 * no end). One `tier_renewed` or `tier_downgraded` event each, in the same statement. Answers how
 * many were renewed and downgraded.
 */
export async function reviewDueTiers(
  db: Queryable,
  now: Date,
  limit: number,
  subjects: TierEventSubjects,
): Promise<{ renewed: number; downgraded: number }> {
  const { rows } = await db.query<{ renewed: number; downgraded: number }>(
    `WITH due AS (
       SELECT m.card_id, m.member_id FROM ledger.member_tiers m
        WHERE m.valid_until <= $1 AND EXISTS (SELECT 1 FROM ledger.tiers t WHERE t.card_id = m.card_id)
        ORDER BY m.valid_until LIMIT $2 FOR UPDATE OF m SKIP LOCKED
     ), ${FACTS}, next AS (
       SELECT d.*, CASE WHEN d.to_rank = d.lowest THEN NULL
                   ELSE ledger.tier_renewal_until(d.window_kind, d.window_days, d.validity_days, d.vday, d.joined_on)::timestamp
                        AT TIME ZONE d.time_zone END AS until
         FROM decided d
     ), moved AS (
       UPDATE ledger.member_tiers m SET prev_rank = m.rank, rank = n.to_rank, valid_until = n.until,
              warn_at = n.until - make_interval(days => n.warning_days), manual_reason = NULL, updated_at = $1
         FROM next n WHERE m.card_id = n.card_id AND m.member_id = n.member_id
       RETURNING m.card_id, m.member_id
     ), event AS (
       INSERT INTO ledger.outbox (id, subject, payload)
       SELECT e.id, CASE WHEN e.renewed THEN $3 ELSE $4 END,
              jsonb_build_object('id', e.id, 'type', CASE WHEN e.renewed THEN 'ledger.tier_renewed' ELSE 'ledger.tier_downgraded' END,
                'tenant_id', e.tenant_id, 'occurred_at', $5::text, 'data', jsonb_build_object(
                  'member_id', e.member_id, 'card_id', e.card_id, 'from', (e.held).name, 'to', t.name,
                  'from_rank', (e.held).rank, 'to_rank', e.to_rank, 'valid_until', ${ISO('e.until')},
                  'qualifying_total', ${UNITS('e')}, 'reason', 'review'))
         FROM (SELECT gen_random_uuid() AS id, n.*, n.to_rank = (n.held).rank AS renewed FROM next n JOIN moved USING (card_id, member_id)) e
         JOIN ledger.tiers t ON t.card_id = e.card_id AND t.rank = e.to_rank
     )
     SELECT count(*) FILTER (WHERE to_rank = (held).rank)::int AS renewed,
            count(*) FILTER (WHERE to_rank <> (held).rank)::int AS downgraded
       FROM next`,
    [now, limit, subjects.renewed, subjects.downgraded, now.toISOString()],
  );
  return rows[0] ?? { renewed: 0, downgraded: 0 };
}

/**
 * Warn of up to `limit` coming reviews whose warning time has come (FOR UPDATE SKIP LOCKED; the
 * warning mark is cleared in the same statement, so each is considered once): when the window
 * judged at valid_until has not yet met the tier's retain threshold, a `tier_downgrade_warning`
 * event says what is still needed and which tier the member would move to (with the card's time
 * zone: the member's mail tells the review's day there). Answers how many
 * rows were considered and how many warnings were written.
 */
export async function warnOfDowngrades(
  db: Queryable,
  now: Date,
  limit: number,
  subjects: TierEventSubjects,
): Promise<{ considered: number; warned: number }> {
  const { rows } = await db.query<{ considered: number; warned: number }>(
    `WITH due AS (
       SELECT m.card_id, m.member_id FROM ledger.member_tiers m
        WHERE m.warn_at <= $1 AND EXISTS (SELECT 1 FROM ledger.tiers t WHERE t.card_id = m.card_id)
        ORDER BY m.warn_at LIMIT $2 FOR UPDATE OF m SKIP LOCKED
     ), ${FACTS}, marked AS (
       UPDATE ledger.member_tiers m SET warn_at = NULL FROM due WHERE m.card_id = due.card_id AND m.member_id = due.member_id
       RETURNING m.card_id
     ), warn AS (
       SELECT gen_random_uuid() AS id, d.*, (d.held).retain_threshold - d.total AS needed FROM decided d
        WHERE d.valid_until > $1 AND d.to_rank < (d.held).rank
     ), event AS (
       INSERT INTO ledger.outbox (id, subject, payload)
       SELECT d.id, $3, jsonb_build_object('id', d.id, 'type', 'ledger.tier_downgrade_warning', 'tenant_id', d.tenant_id,
                'occurred_at', $4::text, 'data', jsonb_build_object(
                  'member_id', d.member_id, 'card_id', d.card_id, 'from', (d.held).name, 'to', t.name,
                  'from_rank', (d.held).rank, 'to_rank', d.to_rank, 'valid_until', ${ISO('d.valid_until')},
                  'qualifying_total', ${UNITS('d')}, 'time_zone', d.time_zone)
                || CASE WHEN d.money THEN jsonb_build_object('amount_needed_to_retain', round(d.needed / 100.0, 2))
                   ELSE jsonb_build_object('points_needed_to_retain', d.needed) END)
         FROM warn d JOIN ledger.tiers t ON t.card_id = d.card_id AND t.rank = d.to_rank
     )
     SELECT (SELECT count(*) FROM due)::int AS considered, (SELECT count(*) FROM warn)::int AS warned`,
    [now, limit, subjects.warning, now.toISOString()],
  );
  return rows[0] ?? { considered: 0, warned: 0 };
}
