-- Up Migration
-- The audit chain becomes keyed (src/domain/audit-chain.ts): rows appended from now on carry
-- chain_version 2, their hash an HMAC-SHA256 under a key derived from AUDIT_KEY (outside the
-- database) named by key_id. The rows already there keep version 1 (plain SHA-256) and verify as
-- they are; the first keyed row links to the last of them, so they stay covered. A constant
-- default: no table rewrite, whatever the log's size.
ALTER TABLE audit_log ADD COLUMN chain_version smallint NOT NULL DEFAULT 1;
ALTER TABLE audit_log ADD COLUMN key_id text;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_keyed CHECK ((chain_version = 1) = (key_id IS NULL));

-- Anchors: a tenant's chain head (seq and hash) at a moment, signed with the audit key. Identity
-- writes one when a head moved since the last anchor, logs it and publishes it as an event
-- (webhook `audit.anchored`), so copies are kept outside this database. Verification checks the
-- chain against every anchor whose signature verifies, and against one given back from outside.
CREATE TABLE audit_anchors (
  tenant_id bigint NOT NULL,
  seq bigint NOT NULL CHECK (seq > 0),
  hash text NOT NULL,
  anchored_at timestamptz NOT NULL,
  key_id text NOT NULL,
  signature text NOT NULL,
  PRIMARY KEY (tenant_id, seq)
);
CREATE TRIGGER audit_anchors_append_only BEFORE UPDATE OR DELETE ON audit_anchors
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

-- Down Migration
DROP TABLE audit_anchors;
ALTER TABLE audit_log DROP CONSTRAINT audit_log_keyed;
ALTER TABLE audit_log DROP COLUMN key_id;
ALTER TABLE audit_log DROP COLUMN chain_version;
