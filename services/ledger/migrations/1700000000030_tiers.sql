-- Up Migration
-- Tiers of a card (bronze, silver, gold): the ladder and its qualification settings, each member's
-- tier with its validity, and what each member qualified with per local day. See
-- docs/decisions/tiers.md.

-- The qualification settings of a card with tiers (no row: the card has no tiers).
CREATE TABLE tier_ladders (
  card_id bigint PRIMARY KEY REFERENCES cards (id),
  tenant_id bigint NOT NULL,
  metric text NOT NULL CHECK (metric IN ('points_earned', 'amount_spent')),
  count_bonuses boolean NOT NULL,
  window_kind text NOT NULL CHECK (window_kind IN ('rolling', 'calendar_year', 'anniversary', 'lifetime')),
  window_days integer NOT NULL CHECK (window_days BETWEEN 1 AND 3660),
  validity_days integer CHECK (validity_days BETWEEN 1 AND 3660),
  warning_days integer NOT NULL CHECK (warning_days BETWEEN 0 AND 365),
  version integer NOT NULL DEFAULT 1,
  updated_at timestamptz NOT NULL
);

-- The steps of a ladder: the lowest rank has entry threshold 0 (every member starts there).
-- Thresholds are points, or cents for amount_spent (and on cashback cards).
CREATE TABLE tiers (
  card_id bigint NOT NULL REFERENCES tier_ladders (card_id),
  rank integer NOT NULL,
  name text NOT NULL,
  description text,
  entry_threshold bigint NOT NULL CHECK (entry_threshold >= 0),
  retain_threshold bigint NOT NULL CHECK (retain_threshold >= 0 AND retain_threshold <= entry_threshold),
  PRIMARY KEY (card_id, rank),
  UNIQUE (card_id, name)
);

-- A member's tier on a card. No row: the lowest tier. `valid_until` null: held with no end (the
-- lowest tier, or a lifetime window). `qualifying` is the sum of the member's tier_days from
-- `counted_from` (the start of the window of the member's last qualifying movement), kept by the
-- posting statement under the account's row lock so that an earn decides an upgrade in its own
-- statement; reads sum tier_days directly. `prev_rank` is the rank before the last change of the
-- row (the posting statement answers whether it upgraded). `warn_at`: when to warn of a downgrade
-- (null: warned, or nothing to warn of).
CREATE TABLE member_tiers (
  card_id bigint NOT NULL REFERENCES tier_ladders (card_id),
  member_id bigint NOT NULL,
  tenant_id bigint NOT NULL,
  rank integer NOT NULL,
  prev_rank integer NOT NULL,
  valid_until timestamptz,
  warn_at timestamptz,
  joined_on date NOT NULL,
  qualifying bigint NOT NULL DEFAULT 0,
  counted_from date NOT NULL,
  manual_reason text,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (card_id, member_id)
);
CREATE INDEX member_tiers_due ON member_tiers (valid_until) WHERE valid_until IS NOT NULL;
CREATE INDEX member_tiers_warn ON member_tiers (warn_at) WHERE warn_at IS NOT NULL;
CREATE INDEX member_tiers_rank ON member_tiers (card_id, rank);

-- What a member qualified with on a local day of the card's time zone (earns add, refunds take
-- away on the day of the refund; may be negative).
CREATE TABLE tier_days (
  card_id bigint NOT NULL,
  member_id bigint NOT NULL,
  day date NOT NULL,
  amount bigint NOT NULL,
  PRIMARY KEY (card_id, member_id, day)
);

-- `joined` plus `years` years, the 29th of February becoming the 28th in other years.
CREATE FUNCTION tier_add_years(joined date, years integer) RETURNS date
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (joined + make_interval(years => years))::date
$$;

-- The index of the anniversary year holding `day` (0: the year from the join date).
CREATE FUNCTION tier_anniversary_index(joined date, day date) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN day < joined THEN 0
    WHEN ledger.tier_add_years(joined, extract(year FROM day)::integer - extract(year FROM joined)::integer) <= day
      THEN extract(year FROM day)::integer - extract(year FROM joined)::integer
    ELSE extract(year FROM day)::integer - extract(year FROM joined)::integer - 1 END
$$;

-- The first day of the qualification window that holds `day`.
CREATE FUNCTION tier_window_start(kind text, days integer, day date, joined date) RETURNS date
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE kind
    WHEN 'rolling' THEN day - (days - 1)
    WHEN 'calendar_year' THEN make_date(extract(year FROM day)::integer, 1, 1)
    WHEN 'anniversary' THEN ledger.tier_add_years(joined, ledger.tier_anniversary_index(joined, day))
    ELSE '-infinity'::date END
$$;

-- The day an upgrade on `day` holds until (exclusive): the end of the next full window, or
-- `validity` days after `day`; null: no end (lifetime).
CREATE FUNCTION tier_upgrade_until(kind text, days integer, validity integer, day date, joined date) RETURNS date
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN validity IS NOT NULL THEN day + 1 + validity
    WHEN kind = 'rolling' THEN day + 1 + days
    WHEN kind = 'calendar_year' THEN make_date(extract(year FROM day)::integer + 2, 1, 1)
    WHEN kind = 'anniversary' THEN ledger.tier_add_years(joined, ledger.tier_anniversary_index(joined, day) + 2)
    ELSE NULL END
$$;

-- The day a tier renewed (or kept after a downgrade) at `day` holds until (exclusive).
CREATE FUNCTION tier_renewal_until(kind text, days integer, validity integer, day date, joined date) RETURNS date
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN validity IS NOT NULL THEN day + validity
    WHEN kind = 'rolling' THEN day + days
    WHEN kind = 'calendar_year' THEN make_date(extract(year FROM day)::integer + 1, 1, 1)
    WHEN kind = 'anniversary' THEN ledger.tier_add_years(joined, ledger.tier_anniversary_index(joined, day) + 1)
    ELSE NULL END
$$;

-- The highest rank whose entry threshold `total` meets (null: the card has no ladder).
CREATE FUNCTION tier_rank_for(card bigint, total bigint) RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT max(rank) FROM ledger.tiers WHERE card_id = card AND entry_threshold <= GREATEST(total, 0)
$$;

-- A qualifying counter kept from `counted_from` moved to a window starting `ws`: the days between
-- the two are old days (before today), which no concurrent movement changes.
CREATE FUNCTION tier_rolled(card bigint, member bigint, total bigint, counted_from date, ws date) RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN counted_from = ws THEN total
    WHEN counted_from < ws THEN total - COALESCE((SELECT sum(amount) FROM ledger.tier_days d
      WHERE d.card_id = card AND d.member_id = member AND d.day >= counted_from AND d.day < ws), 0)::bigint
    ELSE total + COALESCE((SELECT sum(amount) FROM ledger.tier_days d
      WHERE d.card_id = card AND d.member_id = member AND d.day >= ws AND d.day < counted_from), 0)::bigint END
$$;

-- Down Migration
SELECT 1;
