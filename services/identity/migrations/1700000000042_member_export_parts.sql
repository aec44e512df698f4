-- Up Migration
-- A member's export gathers each service's part page by page (members/member-export.ts): each page
-- is kept here in the step that asked for it, committed with the job's checkpoint, so a job
-- resumed by another replica goes on from the last page kept. The job's end assembles the
-- document from them and deletes them; an erasure of the member deletes them too.
CREATE TABLE member_export_parts (
  job_id uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  seq integer NOT NULL,
  service text NOT NULL,
  section text NOT NULL,
  rows jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, seq)
);

-- Down Migration
DROP TABLE member_export_parts;
