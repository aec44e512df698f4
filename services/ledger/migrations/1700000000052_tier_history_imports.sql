-- Up Migration
-- Imports of tiers and of past transactions (docs/migrating.md). Staged lines of a tiers file
-- (one per member) and of a history file, and the imported history itself: past transactions
-- shown in the member's history after the journal's rows, never part of the books (no balance,
-- lot, report or event comes from them).
CREATE TABLE import_tiers (
  import_id uuid NOT NULL REFERENCES imports (id) ON DELETE CASCADE,
  line bigint NOT NULL,
  member_id bigint NOT NULL,
  rank integer NOT NULL,
  valid_until timestamptz NOT NULL,
  PRIMARY KEY (import_id, line),
  UNIQUE (import_id, member_id)
);

CREATE TABLE import_history (
  import_id uuid NOT NULL REFERENCES imports (id) ON DELETE CASCADE,
  line bigint NOT NULL,
  external_id text NOT NULL,
  member_id bigint NOT NULL,
  event text NOT NULL,
  amount bigint NOT NULL,
  occurred_at timestamptz NOT NULL,
  PRIMARY KEY (import_id, line),
  UNIQUE (import_id, external_id)
);

-- A member's past transactions from the system the programme came from. Ids are taken from the
-- journal's sequence, so a history page never shows two entries with the same id.
CREATE TABLE history_entries (
  id bigint PRIMARY KEY DEFAULT nextval('journal_id_seq'),
  tenant_id bigint NOT NULL,
  card_id bigint NOT NULL,
  member_id bigint NOT NULL,
  event text NOT NULL CHECK (event IN ('imported_earned', 'imported_redeemed', 'imported_refunded', 'imported_expired', 'imported_adjusted')),
  amount bigint NOT NULL,
  occurred_at timestamptz NOT NULL,
  import_id uuid NOT NULL,
  external_id text NOT NULL
);
CREATE INDEX history_entries_account ON history_entries (member_id, card_id, occurred_at DESC, id DESC);
CREATE INDEX history_entries_tenant ON history_entries (tenant_id);

-- How many imported history entries the account's history shows after its journal rows.
ALTER TABLE accounts ADD COLUMN imported_entries integer NOT NULL DEFAULT 0;

-- Down Migration
ALTER TABLE accounts DROP COLUMN imported_entries;
DROP TABLE history_entries, import_history, import_tiers;
