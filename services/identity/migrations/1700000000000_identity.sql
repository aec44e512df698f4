-- Up Migration
CREATE TABLE tenants (
  id bigserial PRIMARY KEY,
  name text NOT NULL,
  sandbox boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- An app's API key is stored only as its SHA-256 (keys are 256-bit random, so a plain hash suffices).
CREATE TABLE apps (
  id text PRIMARY KEY,
  tenant_id bigint NOT NULL REFERENCES tenants (id),
  name text NOT NULL,
  scopes text[] NOT NULL DEFAULT '{}',
  key_hash bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  key_rotated_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX apps_tenant ON apps (tenant_id);

CREATE TABLE members (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL REFERENCES tenants (id),
  name text NOT NULL,
  email text,
  phone text,
  accepts_emails boolean NOT NULL DEFAULT false,
  is_active boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX members_tenant_email ON members (tenant_id, email);
CREATE UNIQUE INDEX members_tenant_phone ON members (tenant_id, phone);

-- One-time codes: an HMAC of the code (6 digits are too few to store a plain hash), single use,
-- a bounded number of wrong tries. `purpose` separates login codes from claim codes.
CREATE TABLE otps (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  member_id bigint NOT NULL REFERENCES members (id),
  purpose text NOT NULL,
  code_hash bytea NOT NULL,
  context jsonb NOT NULL DEFAULT '{}',
  attempts integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  consumed_at timestamptz
);
CREATE INDEX otps_member_purpose ON otps (member_id, purpose, created_at DESC);

CREATE TABLE member_sessions (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  member_id bigint NOT NULL REFERENCES members (id),
  token_hash bytea NOT NULL UNIQUE,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE INDEX member_sessions_member ON member_sessions (member_id);


-- Down Migration
DROP TABLE member_sessions, otps, members, apps, tenants;
