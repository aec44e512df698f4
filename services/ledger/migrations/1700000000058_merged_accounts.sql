-- Up Migration
-- A merged source's accounts refuse credits. The merge moves what a source's account holds to the
-- target and marks the account (`merged_into`) under the row lock it took, so a credit that raced
-- the merge (its member resolved before identity made the source a tombstone) and waits on that
-- lock finds the mark and writes nothing, instead of leaving points on an account nobody can
-- reach. A credit that would open a new account for a source finds it in `merged_members`.
ALTER TABLE accounts ADD COLUMN merged_into bigint;

-- Down Migration
ALTER TABLE accounts DROP COLUMN merged_into;
