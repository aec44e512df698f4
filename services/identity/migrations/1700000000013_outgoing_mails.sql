-- Up Migration
-- Mail an event consumer decided to send (member notifications, integration notices): written in
-- the consumer's transaction with the event's processed record, sent after the commit by the
-- outgoing-mail sender of any replica (rows leased with SKIP LOCKED), at least once, and deleted
-- once sent. No SMTP conversation happens while a transaction is open.
CREATE TABLE outgoing_mails (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  -- What decided it (`<consumer>:<event id>`): one mail per event, a redelivery adds none.
  source text NOT NULL UNIQUE,
  -- `notification` (a member's) or `notice` (a tenant's contact or the operator): for the logs.
  kind text NOT NULL,
  to_address text NOT NULL,
  subject text NOT NULL,
  body text NOT NULL,
  -- The tenant was a sandbox when the mail was decided: it goes to the sandbox server.
  sandbox boolean NOT NULL,
  created_at timestamptz NOT NULL,
  -- When a sender may take it: now, after a failed attempt the retry, while one holds it its lease's end.
  next_attempt_at timestamptz NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  last_error text
);
-- A new, empty table: a plain index is built at once (the migration rules: docs/operations.md).
CREATE INDEX outgoing_mails_due ON outgoing_mails (next_attempt_at);

-- Down Migration
DROP TABLE outgoing_mails;
