-- Up Migration
-- A member erased (POST /api/v1/members/{id}/erase) stays as a tombstone: its id, tenant and
-- creation time, erased_at set, no name, email or phone; every lookup skips it (404
-- member_not_found), its email and phone are free for a new member at once (NULLs do not collide
-- in the unique indexes). A nullable column without a default: no table rewrite.
ALTER TABLE members ADD COLUMN erased_at timestamptz;

-- One erasure per member: the job that runs it (a second request answers the same job) and, while
-- it runs, the personal data the services look for in their free text. The job clears name, email
-- and phone when it ends; the row stays as the record that the member was erased, and when.
CREATE TABLE member_erasures (
  tenant_id bigint NOT NULL,
  member_id bigint PRIMARY KEY REFERENCES members (id),
  job_id text NOT NULL,
  requested_at timestamptz NOT NULL,
  completed_at timestamptz,
  name text,
  email text,
  phone text,
  CHECK (completed_at IS NULL OR (name IS NULL AND email IS NULL AND phone IS NULL))
);

-- Audit chain version 3: an entry's free text (`details`: a staff note, an adjustment's reason) is
-- kept beside the chain, not in what it hashes. The chained row carries a keyed digest of the
-- details instead (details_digest); the details themselves live in audit_details, which an erasure
-- may blank (erased_at) without breaking the chain. Rows of versions 1 and 2 keep their details in
-- audit_log.details, hashed as before.
ALTER TABLE audit_log ADD COLUMN details_digest text;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_details_digest CHECK ((chain_version = 3) = (details_digest IS NOT NULL)) NOT VALID;

CREATE TABLE audit_details (
  tenant_id bigint NOT NULL,
  seq bigint NOT NULL,
  details jsonb,
  erased_at timestamptz,
  PRIMARY KEY (tenant_id, seq),
  CHECK ((details IS NULL) = (erased_at IS NOT NULL))
);

-- Down Migration
DROP TABLE audit_details;
ALTER TABLE audit_log DROP CONSTRAINT audit_log_details_digest;
ALTER TABLE audit_log DROP COLUMN details_digest;
DROP TABLE member_erasures;
ALTER TABLE members DROP COLUMN erased_at;
