-- Up Migration
-- Tenant offboarding. A deactivated tenant (deactivated_at set) keeps everything, but its apps are
-- refused (403 tenant_inactive), its staff cannot sign in or use the console and its webhooks
-- pause; after the retention period the operator may purge it (every service hard-deletes its
-- rows). `tenant_lifecycle` records each operator step and outlives the purge: it holds only ids,
-- actions, times and the request id.
ALTER TABLE tenants ADD COLUMN deactivated_at timestamptz;

CREATE TABLE tenant_lifecycle (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  action text NOT NULL CHECK (action IN ('deactivated', 'reactivated', 'export_started', 'purge_started')),
  at timestamptz NOT NULL,
  request_id text NOT NULL,
  -- The jobs a step started (`job_<service>_<uuid>`), the reason given for a deactivation.
  details jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX tenant_lifecycle_tenant ON tenant_lifecycle (tenant_id, at);

-- Down Migration
DROP TABLE tenant_lifecycle;
ALTER TABLE tenants DROP COLUMN deactivated_at;
