-- Up Migration
-- Earning rules (multipliers, per-amount and fixed bonuses, member events) are card configuration,
-- owned here so that caps are decided inside the posting transaction.

-- Every day, week and time-of-day rule reads the card's wall clock in this IANA time zone.
ALTER TABLE cards ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC';

-- A rule of a card and its lifecycle. `version` is the current version (rule_versions); editing an
-- active or paused rule adds a version, editing a draft rewrites its only one. `budget_used` is
-- what the rule has given in all: its row is locked by the earns that use the budget.
CREATE TABLE rules (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  card_id bigint NOT NULL REFERENCES cards (id),
  status text NOT NULL CHECK (status IN ('draft', 'active', 'paused', 'ended')),
  version integer NOT NULL DEFAULT 1 CHECK (version >= 1),
  budget_used bigint NOT NULL DEFAULT 0 CHECK (budget_used >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rules_card ON rules (card_id, status, id);

-- Every version a rule ever had (journal rows name the versions that produced their amounts).
CREATE TABLE rule_versions (
  rule_id bigint NOT NULL REFERENCES rules (id),
  version integer NOT NULL,
  definition jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (rule_id, version)
);

-- What a rule gave one member in one cap period (a local calendar date, week, month, year or
-- `lifetime`). Read and written under the member's account row lock, so a cap is exact.
CREATE TABLE rule_member_usage (
  rule_id bigint NOT NULL REFERENCES rules (id),
  member_id bigint NOT NULL,
  period_key text NOT NULL,
  given bigint NOT NULL CHECK (given >= 0),
  PRIMARY KEY (rule_id, member_id, period_key)
);

-- Which rule versions produced a journal row's amount, with what each gave (append-only, as the
-- journal). An earn keeps what each of its lines earned (for refunds by line); a refund by line
-- keeps the lines and fixed bonuses it took back and the earn it refunded.
CREATE TABLE journal_rules (
  journal_id bigint PRIMARY KEY REFERENCES journal (id),
  card_id bigint NOT NULL,
  member_id bigint NOT NULL,
  rules jsonb NOT NULL,
  allocation jsonb,
  refund_of bigint REFERENCES journal (id),
  refund jsonb
);
CREATE INDEX journal_rules_refund_of ON journal_rules (refund_of) WHERE refund_of IS NOT NULL;

-- Member events reported for a card (POST /api/v1/loyalty/points/events), one per reference.
CREATE TABLE member_events (
  card_id bigint NOT NULL REFERENCES cards (id),
  reference text NOT NULL,
  tenant_id bigint NOT NULL,
  member_id bigint NOT NULL,
  event text NOT NULL,
  answer jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (card_id, reference)
);

-- Points given by member events are journal rows of their own label, `event_bonus`: the journal's
-- event CHECK gains it in the next migration, which replaces the constraint without blocking writes.

-- Down Migration
SELECT 1;
