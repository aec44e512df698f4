/**
 * The tables every service with a database has, defined once: applied to each service's own
 * schema before its own migrations (`migrate` in migrate.ts), tracked in that schema's
 * `runtime_migrations` table (`runtime_migrations_no_transaction` for `noTransaction` ones). `IF NOT EXISTS`: schemas made before these migrations existed got
 * the same tables from their service's first migration.
 */
export const sharedMigrations: { name: string; sql: string; noTransaction?: boolean }[] = [
  {
    name: '1600000000000_shared_tables',
    sql: `
-- Transactional outbox: an event row is written in the transaction of the change it describes and
-- published to JetStream by the relay (Nats-Msg-Id = id, so a re-publish is dropped as a duplicate).
CREATE TABLE IF NOT EXISTS outbox (
  id uuid PRIMARY KEY,
  subject text NOT NULL,
  payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz
);
CREATE INDEX IF NOT EXISTS outbox_unpublished ON outbox (created_at) WHERE published_at IS NULL;

-- Idempotency-Key records (ReplayStore): the key, a hash of the operation and its parameters, the response.
CREATE TABLE IF NOT EXISTS idempotency_keys (
  tenant_id bigint NOT NULL,
  key text NOT NULL,
  request_hash text NOT NULL,
  response jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, key)
);

-- Events of other services a consumer has acted on, so a redelivered event has no second effect.
CREATE TABLE IF NOT EXISTS processed_events (
  consumer text NOT NULL,
  event_id text NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, event_id)
);
`,
  },
  {
    name: '1600000000001_replay_text',
    sql: `
-- A replayed response must be byte for byte the first one: jsonb reorders keys, text keeps them.
ALTER TABLE idempotency_keys ALTER COLUMN response TYPE text USING response::text;
`,
  },
  {
    name: '1600000000002_purge_indexes',
    // Both tables grow with traffic: built CONCURRENTLY, outside a transaction, so writes go on
    // meanwhile. (Applied the ordinary way before this was a no-transaction migration: that
    // record counts, nothing runs again.)
    noTransaction: true,
    sql: `
-- The periodic purge (purge.ts) finds old rows by these columns instead of reading whole tables.
CREATE INDEX CONCURRENTLY IF NOT EXISTS idempotency_keys_created_at ON idempotency_keys (created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS processed_events_processed_at ON processed_events (processed_at);
`,
  },
  {
    name: '1600000000003_jobs',
    sql: `
-- Long work as jobs (jobs.ts): leased by one replica at a time, resumed from the last committed
-- checkpoint by another when its lease runs out; results kept in parts until expires_at.
CREATE TABLE IF NOT EXISTS jobs (
  id uuid PRIMARY KEY,
  tenant_id bigint NOT NULL,
  kind text NOT NULL,
  status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
  params jsonb NOT NULL DEFAULT '{}',
  checkpoint jsonb,
  done bigint NOT NULL DEFAULT 0,
  total bigint,
  errors jsonb NOT NULL DEFAULT '[]',
  result_type text,
  result_size bigint,
  lease_owner text,
  lease_until timestamptz,
  attempts integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz,
  expires_at timestamptz
);
CREATE INDEX IF NOT EXISTS jobs_runnable ON jobs (created_at) WHERE status IN ('queued', 'running');
CREATE INDEX IF NOT EXISTS jobs_tenant ON jobs (tenant_id, created_at);
CREATE TABLE IF NOT EXISTS job_results (
  job_id uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  part integer NOT NULL,
  data bytea NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (job_id, part)
);
CREATE INDEX IF NOT EXISTS job_results_expires_at ON job_results (expires_at);
CREATE INDEX IF NOT EXISTS jobs_finished_at ON jobs (finished_at) WHERE finished_at IS NOT NULL;
`,
  },
  {
    name: '1600000000004_outbox_trace',
    sql: `
-- The W3C traceparent of the operation that wrote an event (null unless tracing is on): the relay
-- publishes the event in that trace. A nullable column without a default: no table rewrite.
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS trace text;
`,
  },
  {
    name: '1600000000005_lz4_payloads',
    sql: `
-- A row over about 2 KB is compressed before it is stored; PostgreSQL's own method (pglz) spends
-- some 20 µs on a 3 KB value, lz4 about 4, at a slightly larger size. An event of an earn on a
-- card with earning rules (its rules_applied) and a replayed answer can be that large. Only new
-- values are written so; a server built without lz4 keeps pglz (the statement is refused there).
DO $$
BEGIN
  ALTER TABLE outbox ALTER COLUMN payload SET COMPRESSION lz4;
  ALTER TABLE idempotency_keys ALTER COLUMN response SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'lz4 is not available on this server: large payloads stay compressed with pglz';
END
$$;
`,
  },
];
