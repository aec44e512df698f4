-- Up Migration
-- Staff users of a tenant (the console's users) and their sessions. A staff token is stored only as
-- its SHA-256, like a member token.
CREATE TABLE staff_users (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL REFERENCES tenants (id),
  email text NOT NULL,
  name text NOT NULL,
  role text NOT NULL CHECK (role IN ('staff', 'manager')),
  active boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL,
  last_sign_in_at timestamptz
);
CREATE UNIQUE INDEX staff_users_tenant_email ON staff_users (tenant_id, email);

CREATE TABLE staff_sessions (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  staff_id bigint NOT NULL REFERENCES staff_users (id),
  token_hash bytea NOT NULL UNIQUE,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE INDEX staff_sessions_staff ON staff_sessions (staff_id) WHERE revoked_at IS NULL;
CREATE INDEX staff_sessions_expires_at ON staff_sessions (expires_at);
CREATE INDEX staff_sessions_revoked_at ON staff_sessions (revoked_at) WHERE revoked_at IS NOT NULL;

-- Sign-in codes of staff users are one-time codes like members' (purpose 'staff'): a code belongs to
-- a member or to a staff user, never both.
ALTER TABLE otps ALTER COLUMN member_id DROP NOT NULL;
ALTER TABLE otps ADD COLUMN staff_id bigint REFERENCES staff_users (id);
ALTER TABLE otps ADD CONSTRAINT otps_one_holder CHECK ((member_id IS NULL) <> (staff_id IS NULL));
CREATE INDEX otps_staff_purpose ON otps (staff_id, purpose, created_at DESC) WHERE staff_id IS NOT NULL;

-- The audit log: one hash chain per tenant. Row n holds the hash of row n - 1 (prev_hash) and its
-- own hash over its content and prev_hash (src/domain/audit-chain.ts); audit_heads keeps each
-- chain's last sequence number and hash, so a deleted last row shows too. Appends lock the head row.
CREATE TABLE audit_log (
  tenant_id bigint NOT NULL,
  seq bigint NOT NULL CHECK (seq > 0),
  event_id text NOT NULL UNIQUE,
  service text NOT NULL,
  occurred_at timestamptz NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  actor jsonb NOT NULL,
  -- what the actor filter matches: a staff user's email, an app id or 'operator'
  actor_key text NOT NULL,
  action text NOT NULL,
  target jsonb NOT NULL,
  amounts jsonb NOT NULL,
  details jsonb NOT NULL,
  request_id text NOT NULL,
  prev_hash text NOT NULL,
  hash text NOT NULL,
  PRIMARY KEY (tenant_id, seq)
);
CREATE INDEX audit_log_actor ON audit_log (tenant_id, lower(actor_key), seq DESC);
CREATE INDEX audit_log_occurred ON audit_log (tenant_id, occurred_at);

CREATE TABLE audit_heads (
  tenant_id bigint PRIMARY KEY,
  seq bigint NOT NULL,
  hash text NOT NULL
);

-- Append-only: an UPDATE or DELETE of the log is refused. (Whoever owns the table can disable this;
-- the hash chain is what makes such a change show.)
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the audit log is append-only';
END $$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

-- Down Migration
DROP TABLE audit_heads;
DROP TABLE audit_log;
DROP FUNCTION audit_log_append_only();
DROP INDEX otps_staff_purpose;
ALTER TABLE otps DROP CONSTRAINT otps_one_holder;
ALTER TABLE otps DROP COLUMN staff_id;
DROP TABLE staff_sessions;
DROP TABLE staff_users;
