-- Up Migration
-- A member's consents, per purpose: whether it is granted now, the last time it was granted and
-- withdrawn, and where the last change came from (registration, an app, an unsubscribe link).
-- A member without a marketing_email row has the consent of `members.accepts_emails` as given at
-- registration (no backfill of the members table).
CREATE TABLE member_consents (
  tenant_id bigint NOT NULL,
  member_id bigint NOT NULL REFERENCES members (id),
  purpose text NOT NULL CHECK (purpose IN ('marketing_email', 'marketing_sms')),
  granted boolean NOT NULL,
  granted_at timestamptz,
  withdrawn_at timestamptz,
  source text NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (member_id, purpose)
);

-- Mail waiting to be sent says what it is: `marketing` mail is sent only while its member's
-- consent holds (checked again just before it goes); `transactional` mail never waits on consent.
ALTER TABLE outgoing_mails ADD COLUMN category text NOT NULL DEFAULT 'transactional';
ALTER TABLE outgoing_mails ADD COLUMN member_id bigint;

-- Down Migration
ALTER TABLE outgoing_mails DROP COLUMN member_id;
ALTER TABLE outgoing_mails DROP COLUMN category;
DROP TABLE member_consents;
