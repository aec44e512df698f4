-- Up Migration
-- The merge sweep reads the merges of the last day (what a credit still left on a source moves to
-- its target): a range of this index, however many merges there have been.
CREATE INDEX CONCURRENTLY IF NOT EXISTS merged_members_recent ON merged_members (merged_at);

-- Down Migration
DROP INDEX IF EXISTS merged_members_recent;
