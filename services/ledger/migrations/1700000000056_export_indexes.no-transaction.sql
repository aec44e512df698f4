-- Up Migration
-- Exports read a card's journal rows and lots in (created_at, id) order from a keyset, a time range
-- being a range of these indexes: each page is one index range scan, however large the journal.
CREATE INDEX CONCURRENTLY IF NOT EXISTS journal_card_time ON journal (card_id, created_at, id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS lots_card_time ON lots (card_id, created_at, id);

-- Down Migration
DROP INDEX IF EXISTS lots_card_time;
DROP INDEX IF EXISTS journal_card_time;
