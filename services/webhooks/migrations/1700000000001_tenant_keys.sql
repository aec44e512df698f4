-- Up Migration
-- Envelope encryption of the endpoints' signing secrets: one data key per tenant, stored wrapped
-- (AES-256-GCM) under the key-encryption key SECRETS_KEY of the environment; `key_id` names the
-- key that wrapped it, so a rotation of SECRETS_KEY knows which rows still need rewrapping. The
-- secrets (`endpoints.secret`, `previous_secret`) are then stored sealed under the tenant's data
-- key; rows from before (plaintext) are sealed when the service starts.
CREATE TABLE tenant_keys (
  tenant_id bigint PRIMARY KEY,
  wrapped_key text NOT NULL,
  key_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  rewrapped_at timestamptz
);

-- Down Migration
DROP TABLE tenant_keys;
