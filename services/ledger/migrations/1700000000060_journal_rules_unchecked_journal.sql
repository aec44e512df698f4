-- Up Migration
-- A journal_rules row is written by the same statement as its journal row (store/accounts.ts) or
-- in the transaction of the refund that made it (store/rules.ts), and journal rows are never
-- deleted except by a tenant's purge, which deletes journal_rules first (tenant-tables.ts). The
-- foreign key to the journal checked, for every earn on a card with rules, what that statement
-- had just written, and locked the new journal row to do it: some 12 µs of PostgreSQL CPU a
-- posting (docs/benchmarks.md). `refund_of` keeps its key (refunds only; it names an older row).
ALTER TABLE journal_rules DROP CONSTRAINT journal_rules_journal_id_fkey;

-- Down Migration
ALTER TABLE journal_rules ADD CONSTRAINT journal_rules_journal_id_fkey FOREIGN KEY (journal_id) REFERENCES journal (id);
