-- Up Migration
-- This migration created the idempotency_keys table; the runtime's shared migrations define it now
-- (libs/runtime/src/shared-tables.ts). Kept, empty, so that databases that ran it stay in order.
SELECT 1;

-- Down Migration
SELECT 1;
