-- Up Migration
-- Tenants the operator deactivated: their webhooks pause. Identity's tenant_deactivated and
-- tenant_reactivated events set and clear `paused` (the later event wins, by when it happened);
-- while paused, the intake routes none of the tenant's events and no delivery of its endpoints is
-- sent: deliveries already due wait, and go out once the tenant is reactivated.
CREATE TABLE tenant_states (
  tenant_id bigint PRIMARY KEY,
  paused boolean NOT NULL,
  changed_at timestamptz NOT NULL
);

-- Down Migration
DROP TABLE tenant_states;
