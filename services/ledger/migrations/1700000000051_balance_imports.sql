-- Up Migration
-- Bulk imports of balances (libs/runtime/src/imports.ts): the upload, the bad lines, the staged
-- rows, and the external ids already imported (running the same file again changes nothing).
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

-- Good lines of a balances file (members resolved), waiting for the execute job.
CREATE TABLE import_balances (
  import_id uuid NOT NULL REFERENCES imports (id) ON DELETE CASCADE,
  line bigint NOT NULL,
  external_id text NOT NULL,
  member_id bigint NOT NULL,
  amount bigint NOT NULL CHECK (amount > 0),
  earned_at timestamptz NOT NULL,
  available_at timestamptz NOT NULL,
  expires_at timestamptz,
  PRIMARY KEY (import_id, line),
  UNIQUE (import_id, external_id)
);

-- One row per imported balance line ever applied, by its external id: the merge inserts here
-- first and applies only the lines that were new, in the same transaction.
CREATE TABLE import_keys (
  tenant_id bigint NOT NULL,
  card_id bigint NOT NULL,
  kind text NOT NULL,
  external_id text NOT NULL,
  journal_id bigint,
  PRIMARY KEY (tenant_id, card_id, kind, external_id)
);

-- Down Migration
DROP TABLE import_keys, import_balances, import_errors, import_chunks, imports;
