-- Up Migration
-- The periodic purge (service.ts) finds dead codes and sessions by these columns. Codes and
-- sessions grow with members: built CONCURRENTLY, outside a transaction, so sign-ins go on meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS otps_expires_at ON otps (expires_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS member_sessions_expires_at ON member_sessions (expires_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS member_sessions_revoked_at ON member_sessions (revoked_at) WHERE revoked_at IS NOT NULL;

-- Down Migration
DROP INDEX member_sessions_revoked_at, member_sessions_expires_at, otps_expires_at;
