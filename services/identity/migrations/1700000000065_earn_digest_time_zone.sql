-- Up Migration
-- The time zone of the card a digest's earns were on (from the ledger's points_earned events):
-- the mail tells the day pending points become spendable in it. Null: UTC (earns before the
-- ledger sent the zone, or earns on cards of different zones).
ALTER TABLE earn_mail_digests ADD COLUMN time_zone text;

-- Down Migration
ALTER TABLE earn_mail_digests DROP COLUMN time_zone;
