-- Up Migration
-- Validates the version-3 digest check added NOT VALID by 1700000000040 (a scan of the audit log
-- that lets appends go on meanwhile; validating a valid constraint again does nothing).
ALTER TABLE audit_log VALIDATE CONSTRAINT audit_log_details_digest;
-- A member's export and erasure find the audit rows naming them as a target.
CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_log_member ON audit_log (tenant_id, (target->>'member_id')) WHERE target ? 'member_id';

-- Down Migration
DROP INDEX IF EXISTS audit_log_member;
