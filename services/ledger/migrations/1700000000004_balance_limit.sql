-- Up Migration
-- No balance past MAX_BALANCE (src/domain/money.ts): the posting statement refuses such a credit
-- itself (balance_limit_exceeded); this check is the backstop for any other write, so every
-- balance stays a number JS reads exactly (below 2^53).
ALTER TABLE accounts ADD CONSTRAINT accounts_balance_limit CHECK (balance <= 1000000000000000);

-- Down Migration
ALTER TABLE accounts DROP CONSTRAINT accounts_balance_limit;
