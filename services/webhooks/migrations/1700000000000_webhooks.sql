-- Up Migration
-- A tenant's webhook endpoints. The signing secret must be readable to sign (it is an HMAC key,
-- not a password); during a rotation the previous one signs too until previous_secret_expires_at.
-- Deleted endpoints are kept (deleted_at) with their delivery log until the purge.
CREATE TABLE endpoints (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  url text NOT NULL,
  description text,
  event_types text[] NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  disabled_reason text CHECK (disabled_reason IN ('manual', 'failing')),
  disabled_at timestamptz,
  -- The first failed attempt since the last successful one; three days of it disable the endpoint.
  failing_since timestamptz,
  secret text NOT NULL,
  previous_secret text,
  previous_secret_expires_at timestamptz,
  secret_rotated_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz,
  CHECK (enabled OR disabled_reason IS NOT NULL OR deleted_at IS NOT NULL)
);
CREATE INDEX endpoints_tenant ON endpoints (tenant_id, id) WHERE deleted_at IS NULL;
CREATE INDEX endpoints_failing ON endpoints (failing_since) WHERE failing_since IS NOT NULL AND enabled AND deleted_at IS NULL;
CREATE INDEX endpoints_deleted ON endpoints (deleted_at) WHERE deleted_at IS NOT NULL;

-- One row per event some endpoint receives: the exact body every attempt signs and sends.
CREATE TABLE events (
  id uuid PRIMARY KEY,
  tenant_id bigint NOT NULL,
  type text NOT NULL,
  body text NOT NULL,
  created_at timestamptz NOT NULL,
  received_at timestamptz NOT NULL
);
CREATE INDEX events_received ON events (received_at);

-- One event to one endpoint. While pending, next_attempt_at is when it is due, or, while a replica
-- holds it (in memory or in flight), the end of that replica's lease: a replica that dies hands it
-- back when the lease runs out. Retries stop at expires_at.
CREATE TABLE deliveries (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  endpoint_id bigint NOT NULL REFERENCES endpoints (id) ON DELETE CASCADE,
  event_id uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempt_count integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  delivered_at timestamptz,
  failed_at timestamptz,
  last_error text,
  -- An event reaches an endpoint once: a redelivered JetStream message creates nothing new. (Event
  -- first: the same index finds an event's deliveries for the purge's cascade.)
  UNIQUE (event_id, endpoint_id),
  CHECK (status <> 'pending' OR next_attempt_at IS NOT NULL)
);
-- Due deliveries by endpoint: a replica takes each endpoint's oldest due ones, as many as that
-- endpoint's lane has room for, and finds the endpoints with pending work by skipping through this
-- index one endpoint at a time (so a slow endpoint's large backlog is never scanned past).
CREATE INDEX deliveries_due ON deliveries (endpoint_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX deliveries_log ON deliveries (endpoint_id, id DESC);

-- Every attempt: when, how long, the HTTP status or why there was none.
CREATE TABLE attempts (
  delivery_id bigint NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
  attempted_at timestamptz NOT NULL,
  duration_ms integer NOT NULL,
  http_status integer,
  error text
);
CREATE INDEX attempts_delivery ON attempts (delivery_id, attempted_at);

-- Down Migration
DROP TABLE attempts;
DROP TABLE deliveries;
DROP TABLE events;
DROP TABLE endpoints;
