-- Up Migration
-- A member's claim requests by member (a merge moves the open ones to the target member).
CREATE INDEX CONCURRENTLY IF NOT EXISTS claim_requests_member ON claim_requests (member_id);

-- Down Migration
DROP INDEX IF EXISTS claim_requests_member;
