-- Up Migration
-- A member merged into another (POST /api/v1/members/{id}/merge on the target) is a tombstone
-- like an erased one (erased_at set: every lookup skips it, 404 member_not_found) that points at
-- the member it was merged into. Its name, email and phone leave its row: the target takes the
-- email or phone it lacks, the rest goes. Nullable, no default: no table rewrite.
ALTER TABLE members ADD COLUMN merged_into bigint;

-- One merge per source member: the job that runs it (a repeated request answers the same job),
-- who asked, and what each service moved once it is done.
CREATE TABLE member_merges (
  tenant_id bigint NOT NULL,
  source_member_id bigint PRIMARY KEY REFERENCES members (id),
  target_member_id bigint NOT NULL REFERENCES members (id),
  job_id text NOT NULL,
  requested_at timestamptz NOT NULL,
  completed_at timestamptz,
  moved jsonb,
  CHECK (source_member_id <> target_member_id)
);
CREATE INDEX member_merges_target ON member_merges (target_member_id);

-- Down Migration
DROP TABLE member_merges;
ALTER TABLE members DROP COLUMN merged_into;
