-- Up Migration
-- Idempotency-Key records of this service (see libs/runtime idempotency.ts).
CREATE TABLE idempotency_keys (
  tenant_id bigint NOT NULL,
  key text NOT NULL,
  request_hash text NOT NULL,
  response jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, key)
);

-- Down Migration
DROP TABLE idempotency_keys;
