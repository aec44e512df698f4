-- Up Migration
-- Bulk imports of members (libs/runtime/src/imports.ts): the upload, the bad lines, the staged
-- rows; a member's id in the system it came from (external_id, unique per tenant: an import
-- merges by it, so running the same file again changes nothing).
CREATE TABLE imports (
  id uuid PRIMARY KEY,
  tenant_id bigint NOT NULL,
  kind text NOT NULL,
  card_id bigint,
  format text NOT NULL CHECK (format IN ('csv', 'jsonl')),
  status text NOT NULL,
  bytes bigint NOT NULL DEFAULT 0,
  chunks integer NOT NULL DEFAULT 0,
  lines bigint NOT NULL DEFAULT 0,
  valid bigint NOT NULL DEFAULT 0,
  invalid bigint NOT NULL DEFAULT 0,
  applied bigint NOT NULL DEFAULT 0,
  unchanged bigint NOT NULL DEFAULT 0,
  validate_job uuid,
  execute_job uuid,
  created_at timestamptz NOT NULL
);
CREATE INDEX imports_created ON imports (created_at);
-- The uploaded file, in the pieces the gateway forwarded (each under the NATS message limit).
CREATE TABLE import_chunks (
  import_id uuid NOT NULL REFERENCES imports (id) ON DELETE CASCADE,
  seq integer NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (import_id, seq)
);
-- Every bad line the validation found (the validate job lists the first 1,000; its result, the error file, up to 100,000).
CREATE TABLE import_errors (
  import_id uuid NOT NULL REFERENCES imports (id) ON DELETE CASCADE,
  line bigint NOT NULL,
  column_name text NOT NULL,
  reason text NOT NULL
);
CREATE INDEX import_errors_import ON import_errors (import_id, line);

-- Good lines of a members file, waiting for the execute job.
CREATE TABLE import_members (
  import_id uuid NOT NULL REFERENCES imports (id) ON DELETE CASCADE,
  line bigint NOT NULL,
  external_id text NOT NULL,
  name text NOT NULL,
  email text,
  phone text,
  joined_at timestamptz NOT NULL,
  accepts_emails boolean NOT NULL,
  PRIMARY KEY (import_id, line),
  UNIQUE (import_id, external_id),
  UNIQUE (import_id, email),
  UNIQUE (import_id, phone)
);

ALTER TABLE members ADD COLUMN external_id text;

-- Down Migration
ALTER TABLE members DROP COLUMN external_id;
DROP TABLE import_members, import_errors, import_chunks, imports;
