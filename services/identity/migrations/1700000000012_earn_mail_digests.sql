-- Up Migration
-- Points-earned mail, summarized: a member's earns within EARN_MAIL_WINDOW_SECONDS of the first
-- become one mail ("You earned 120 points in 4 purchases"). One row per member waiting for that
-- mail; the sender leases due rows, mails outside any transaction, then takes what it mailed off
-- the row (earns that arrived meanwhile stay for the next mail) and deletes it when nothing is left.
CREATE TABLE earn_mail_digests (
  tenant_id bigint NOT NULL,
  member_id bigint NOT NULL,
  -- The card earned on; null once the member earned on more than one card (no single balance to tell).
  card_id bigint,
  earns integer NOT NULL,
  points bigint NOT NULL,
  pending_points bigint NOT NULL DEFAULT 0,
  -- The latest day the pending points become spendable.
  available_at timestamptz,
  -- The card's balance after the latest earn (by the event's time) and that time.
  new_balance bigint,
  balance_at timestamptz NOT NULL,
  due_at timestamptz NOT NULL,
  lease_until timestamptz,
  PRIMARY KEY (tenant_id, member_id)
);
CREATE INDEX earn_mail_digests_due ON earn_mail_digests (due_at);

-- Down Migration
DROP TABLE earn_mail_digests;
