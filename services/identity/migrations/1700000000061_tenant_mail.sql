-- Up Migration
-- A tenant's mail: branding, default language, Reply-To and optionally its own SMTP server, whose
-- password is stored sealed under the tenant's data key (tenant_keys, wrapped under SECRETS_KEY:
-- the envelope encryption the webhooks service uses for signing secrets).
CREATE TABLE tenant_mail_settings (
  tenant_id bigint PRIMARY KEY REFERENCES tenants (id),
  sender_name text,
  from_address text,
  reply_to text,
  logo_url text,
  primary_color text NOT NULL,
  background_color text NOT NULL,
  postal_address text,
  contact text,
  default_locale text NOT NULL CHECK (default_locale IN ('en', 'fr', 'ar')),
  smtp_host text,
  smtp_port integer,
  smtp_secure boolean,
  smtp_username text,
  smtp_password text,
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tenant_keys (
  tenant_id bigint PRIMARY KEY,
  wrapped_key text NOT NULL,
  key_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  rewrapped_at timestamptz
);

-- Down Migration
DROP TABLE tenant_keys;
DROP TABLE tenant_mail_settings;
