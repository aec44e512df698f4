-- Up Migration
-- Programme reports read rollups, not the journal. Every statement that inserts journal rows also
-- inserts one delta per row (a statement trigger over the inserted rows, in the same transaction:
-- exactly once, whatever wrote the rows), dated by the local day in the card's time zone. A
-- periodic fold moves deltas into the daily rollups (deleting them in the same transaction, so a
-- delta is counted once); a report adds the rollups and the deltas not folded yet.

-- What one point of a points card is worth in the card's currency (the liability of the
-- outstanding points); null: not set. Cashback cards hold money already.
ALTER TABLE cards ADD COLUMN point_value numeric(14, 6) CHECK (point_value >= 0);

CREATE TABLE report_deltas (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  card_id bigint NOT NULL,
  day date NOT NULL,
  event text NOT NULL,
  reward_id bigint NOT NULL,
  member_id bigint NOT NULL,
  amount bigint NOT NULL
);
CREATE INDEX report_deltas_card ON report_deltas (card_id, day);

-- Per card, local day, journal label and reward (0: none): the sum of the positive amounts, the
-- sum of the negative ones and the number of rows.
CREATE TABLE report_days (
  tenant_id bigint NOT NULL,
  card_id bigint NOT NULL,
  day date NOT NULL,
  event text NOT NULL,
  reward_id bigint NOT NULL,
  credits bigint NOT NULL,
  debits bigint NOT NULL,
  entries bigint NOT NULL,
  PRIMARY KEY (card_id, day, event, reward_id)
);

-- The members with at least one journal row on a card on a local day (active members).
CREATE TABLE report_active (
  card_id bigint NOT NULL,
  day date NOT NULL,
  member_id bigint NOT NULL,
  PRIMARY KEY (card_id, day, member_id)
);

-- The label a report reads: a balance brought in by an import is a staff adjustment in the journal
-- (metadata.import names the import), reported as `balance_imported` (issued).
CREATE FUNCTION report_event(event text, metadata jsonb) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN event = 'staff_adjustment' AND metadata ? 'import' THEN 'balance_imported' ELSE event END
$$;

CREATE FUNCTION journal_report_deltas() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ledger.report_deltas (tenant_id, card_id, day, event, reward_id, member_id, amount)
  SELECT n.tenant_id, n.card_id, (n.created_at AT TIME ZONE c.time_zone)::date,
         ledger.report_event(n.event, n.metadata), coalesce(n.reward_id, 0),
         n.member_id, n.amount
    FROM journal_rows n JOIN ledger.cards c ON c.id = n.card_id;
  RETURN NULL;
END
$$;

-- The rollups of the rows already there, under the trigger's lock (no write comes in between).
CREATE TRIGGER journal_report AFTER INSERT ON journal REFERENCING NEW TABLE AS journal_rows
  FOR EACH STATEMENT EXECUTE FUNCTION journal_report_deltas();
INSERT INTO report_days (tenant_id, card_id, day, event, reward_id, credits, debits, entries)
SELECT j.tenant_id, j.card_id, (j.created_at AT TIME ZONE c.time_zone)::date, report_event(j.event, j.metadata),
       coalesce(j.reward_id, 0), sum(greatest(j.amount, 0)), sum(least(j.amount, 0)), count(*)
  FROM journal j JOIN cards c ON c.id = j.card_id
 GROUP BY 1, 2, 3, 4, 5;
INSERT INTO report_active (card_id, day, member_id)
SELECT DISTINCT j.card_id, (j.created_at AT TIME ZONE c.time_zone)::date, j.member_id
  FROM journal j JOIN cards c ON c.id = j.card_id;

-- Down Migration
DROP TRIGGER journal_report ON journal;
DROP FUNCTION journal_report_deltas();
DROP FUNCTION report_event(text, jsonb);
DROP TABLE report_active;
DROP TABLE report_days;
DROP TABLE report_deltas;
ALTER TABLE cards DROP COLUMN point_value;
