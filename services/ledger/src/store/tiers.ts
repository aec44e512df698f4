import type { Queryable } from '@loyalty/runtime';
import type { TierLadder, TierMetric, TierStep, TierWindow } from '../domain/tiers.ts';

/**
 * Tiers in the ledger's schema (migration 30): `tier_ladders` (settings), `tiers` (steps),
 * `member_tiers` (each member's tier) and `tier_days` (what a member qualified with per local day).
 */

interface LadderRow {
  metric: TierMetric;
  count_bonuses: boolean;
  window_kind: TierWindow;
  window_days: number;
  validity_days: number | null;
  warning_days: number;
  version: number;
  updated_at: Date;
  steps: { rank: number; name: string; description: string | null; entry: number; retain: number }[];
}

/** The card's ladder row (settings and steps, lowest rank first), enabled or not; undefined: never set. */
export async function findLadder(db: Queryable, cardId: number, lock = false): Promise<TierLadder | undefined> {
  const { rows } = await db.query<LadderRow>(
    `SELECT l.metric, l.count_bonuses, l.window_kind, l.window_days, l.validity_days, l.warning_days, l.version, l.updated_at,
            COALESCE((SELECT jsonb_agg(jsonb_build_object('rank', t.rank, 'name', t.name, 'description', t.description,
                        'entry', t.entry_threshold, 'retain', t.retain_threshold) ORDER BY t.rank)
                        FROM ledger.tiers t WHERE t.card_id = l.card_id), '[]'::jsonb) AS steps
       FROM ledger.tier_ladders l WHERE l.card_id = $1${lock ? ' FOR UPDATE OF l' : ''}`,
    [cardId],
  );
  const r = rows[0];
  if (!r) return undefined;
  return {
    metric: r.metric,
    countBonuses: r.count_bonuses,
    window: r.window_kind,
    windowDays: r.window_days,
    validityDays: r.validity_days,
    warningDays: r.warning_days,
    version: r.version,
    updatedAt: r.updated_at,
    steps: r.steps.map((s) => ({ ...s, entry: Number(s.entry), retain: Number(s.retain) })),
  };
}

/** Write a card's ladder (a new version; steps replaced). */
export async function saveLadder(
  db: Queryable,
  k: { tenantId: number; cardId: number },
  ladder: Omit<TierLadder, 'version' | 'updatedAt'>,
  at: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO ledger.tier_ladders (card_id, tenant_id, metric, count_bonuses, window_kind, window_days, validity_days, warning_days, version, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9)
     ON CONFLICT (card_id) DO UPDATE SET metric = EXCLUDED.metric, count_bonuses = EXCLUDED.count_bonuses,
       window_kind = EXCLUDED.window_kind, window_days = EXCLUDED.window_days, validity_days = EXCLUDED.validity_days,
       warning_days = EXCLUDED.warning_days, version = tier_ladders.version + 1, updated_at = EXCLUDED.updated_at`,
    [
      k.cardId,
      k.tenantId,
      ladder.metric,
      ladder.countBonuses,
      ladder.window,
      ladder.windowDays,
      ladder.validityDays,
      ladder.warningDays,
      at,
    ],
  );
  await db.query('DELETE FROM ledger.tiers WHERE card_id = $1', [k.cardId]);
  const steps: TierStep[] = ladder.steps;
  if (steps.length > 0) {
    await db.query(
      `INSERT INTO ledger.tiers (card_id, rank, name, description, entry_threshold, retain_threshold)
       SELECT $1, * FROM unnest($2::integer[], $3::text[], $4::text[], $5::bigint[], $6::bigint[])`,
      [
        k.cardId,
        steps.map((s) => s.rank),
        steps.map((s) => s.name),
        steps.map((s) => s.description),
        steps.map((s) => s.entry),
        steps.map((s) => s.retain),
      ],
    );
  }
}

/** How many members hold each rank above the lowest (members without a row hold the lowest). */
export async function membersPerRank(db: Queryable, cardId: number): Promise<Map<number, number>> {
  const { rows } = await db.query<{ rank: number; n: number }>(
    'SELECT rank, count(*)::int AS n FROM ledger.member_tiers WHERE card_id = $1 GROUP BY rank',
    [cardId],
  );
  return new Map(rows.map((r) => [r.rank, r.n]));
}

/** Members with an account on the card. */
export async function membersOfCard(db: Queryable, cardId: number): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger.accounts WHERE card_id = $1', [
    cardId,
  ]);
  return rows[0]?.n ?? 0;
}

export interface MemberTierRow {
  rank: number;
  valid_until: Date | null;
  warn_at: Date | null;
  joined_on: string;
  manual_reason: string | null;
}

/** The member's tier row on the card (undefined: the lowest tier, never moved). */
export async function findMemberTier(
  db: Queryable,
  cardId: number,
  memberId: number,
  lock = false,
): Promise<MemberTierRow | undefined> {
  const { rows } = await db.query<MemberTierRow>(
    `SELECT rank, valid_until, warn_at, to_char(joined_on, 'YYYY-MM-DD') AS joined_on, manual_reason
       FROM ledger.member_tiers WHERE card_id = $1 AND member_id = $2${lock ? ' FOR UPDATE' : ''}`,
    [cardId, memberId],
  );
  return rows[0];
}

/** Only the rank (earning rules with a tier condition read it before an earn). */
export async function memberRank(db: Queryable, cardId: number, memberId: number): Promise<number | undefined> {
  const { rows } = await db.query<{ rank: number }>(
    'SELECT rank FROM ledger.member_tiers WHERE card_id = $1 AND member_id = $2',
    [cardId, memberId],
  );
  return rows[0]?.rank;
}

/** The ranks of several members (card and member id pairs) in one statement; absent: no row (the lowest tier). */
export async function memberRanks(
  db: Queryable,
  keys: readonly { cardId: number; memberId: number }[],
): Promise<Map<string, number>> {
  const { rows } = await db.query<{ card_id: string; member_id: string; rank: number }>({
    name: 'ledger.member_ranks',
    text: `SELECT m.card_id, m.member_id, m.rank FROM unnest($1::bigint[], $2::bigint[]) AS k(card_id, member_id)
             JOIN ledger.member_tiers m ON m.card_id = k.card_id AND m.member_id = k.member_id`,
    values: [keys.map((k) => k.cardId), keys.map((k) => k.memberId)],
  });
  return new Map(rows.map((r) => [`${r.card_id}:${r.member_id}`, r.rank]));
}

/** What the member qualified with on days [from, until) (null bounds: open). */
export async function qualifyingBetween(
  db: Queryable,
  cardId: number,
  memberId: number,
  from: string | null,
  until: string | null,
): Promise<number> {
  const { rows } = await db.query<{ total: number }>(
    `SELECT COALESCE(sum(amount), 0)::bigint AS total FROM ledger.tier_days
      WHERE card_id = $1 AND member_id = $2 AND ($3::date IS NULL OR day >= $3::date) AND ($4::date IS NULL OR day < $4::date)`,
    [cardId, memberId, from, until],
  );
  return Number(rows[0]?.total ?? 0);
}

/** The member's window bounds for `day` (SQL functions of migration 30, so reads and writes agree). */
export async function windowOf(
  db: Queryable,
  ladder: Pick<TierLadder, 'window' | 'windowDays'>,
  day: string,
  joined: string,
): Promise<{ start: string | null; end: string | null }> {
  const { rows } = await db.query<{ start: string | null; end: string | null }>(
    `SELECT CASE WHEN s = '-infinity' THEN NULL ELSE to_char(s, 'YYYY-MM-DD') END AS start,
            CASE WHEN $1 = 'lifetime' THEN NULL
                 WHEN $1 = 'rolling' THEN to_char($3::date + 1, 'YYYY-MM-DD')
                 WHEN $1 = 'calendar_year' THEN to_char(make_date(extract(year FROM $3::date)::integer + 1, 1, 1), 'YYYY-MM-DD')
                 ELSE to_char(ledger.tier_add_years($4::date, ledger.tier_anniversary_index($4::date, $3::date) + 1), 'YYYY-MM-DD') END AS end
       FROM (SELECT ledger.tier_window_start($1, $2, $3::date, $4::date) AS s) w`,
    [ladder.window, ladder.windowDays, day, joined],
  );
  const r = rows[0];
  return { start: r?.start ?? null, end: r?.end ?? null };
}

/** The local date of `at` in `timeZone`, and of the account's opening (the member's join date on the card). */
export async function joinedOn(
  db: Queryable,
  cardId: number,
  memberId: number,
  timeZone: string,
): Promise<string | null> {
  const { rows } = await db.query<{ joined: string }>(
    `SELECT to_char((created_at AT TIME ZONE $3)::date, 'YYYY-MM-DD') AS joined FROM ledger.accounts WHERE card_id = $1 AND member_id = $2`,
    [cardId, memberId, timeZone],
  );
  return rows[0]?.joined ?? null;
}

/**
 * Set a member's tier by hand (staff or the operator) until `validUntil`, opening the member's
 * row if there is none; the member's qualifying counter is left as it is.
 */
export async function setManualTier(
  db: Queryable,
  k: { tenantId: number; cardId: number; memberId: number },
  t: { rank: number; validUntil: Date; warnAt: Date | null; reason: string; joined: string; countedFrom: string },
  at: Date,
): Promise<{ prevRank: number | null }> {
  const { rows } = await db.query<{ prev_rank: number | null }>(
    `WITH before AS (SELECT rank FROM ledger.member_tiers WHERE card_id = $1 AND member_id = $2 FOR UPDATE)
     INSERT INTO ledger.member_tiers AS m (card_id, member_id, tenant_id, rank, prev_rank, valid_until, warn_at, joined_on, qualifying, counted_from, manual_reason, updated_at)
     VALUES ($1, $2, $3, $4, $4, $5, $6, $8::date, 0, $9::date, $7, $10)
     ON CONFLICT (card_id, member_id) DO UPDATE SET prev_rank = m.rank, rank = EXCLUDED.rank, valid_until = EXCLUDED.valid_until,
       warn_at = EXCLUDED.warn_at, manual_reason = EXCLUDED.manual_reason, updated_at = EXCLUDED.updated_at
     RETURNING (SELECT rank FROM before) AS prev_rank`,
    [k.cardId, k.memberId, k.tenantId, t.rank, t.validUntil, t.warnAt, t.reason, t.joined, t.countedFrom, at],
  );
  return { prevRank: rows[0]?.prev_rank ?? null };
}

/**
 * A refund lowers what the member qualified with, on the day of the refund (under the account's
 * row lock the refund holds): the day's amount and the member's window counter. A member without
 * a tier row never qualified with anything, so nothing is lowered. The tier itself never moves
 * here: a downgrade waits for the tier's review.
 */
export async function lowerQualifying(
  db: Queryable,
  k: { cardId: number; memberId: number },
  m: { day: string; window: string; windowDays: number; amount: number; at: Date },
): Promise<void> {
  await db.query(
    `WITH moved AS (
       UPDATE ledger.member_tiers t
          SET qualifying = ledger.tier_rolled(t.card_id, t.member_id, t.qualifying, t.counted_from,
                             ledger.tier_window_start($4, $5, $3::date, t.joined_on)) - $6,
              counted_from = ledger.tier_window_start($4, $5, $3::date, t.joined_on),
              updated_at = $7
        WHERE t.card_id = $1 AND t.member_id = $2
        RETURNING t.card_id, t.member_id
     )
     INSERT INTO ledger.tier_days AS d (card_id, member_id, day, amount)
     SELECT card_id, member_id, $3::date, -$6::bigint FROM moved
     ON CONFLICT (card_id, member_id, day) DO UPDATE SET amount = d.amount + EXCLUDED.amount`,
    [k.cardId, k.memberId, m.day, m.window, m.windowDays, m.amount, m.at],
  );
}
