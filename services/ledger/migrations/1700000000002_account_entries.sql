-- Up Migration
-- The number of journal entries of each account, kept with every journal row, so a history page's
-- total is one row read however long the account's history grows.
ALTER TABLE accounts ADD COLUMN entries bigint NOT NULL DEFAULT 0 CHECK (entries >= 0);
UPDATE accounts a SET entries = j.n FROM (SELECT card_id, member_id, count(*) AS n FROM journal GROUP BY card_id, member_id) j
 WHERE a.card_id = j.card_id AND a.member_id = j.member_id;

-- Down Migration
ALTER TABLE accounts DROP COLUMN entries;
