-- Up Migration
-- One code per (card, member), created on first request; unique within the tenant so a code
-- alone finds its member and card.
CREATE TABLE referral_codes (
  tenant_id bigint NOT NULL,
  card_id bigint NOT NULL,
  member_id bigint NOT NULL,
  code text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (card_id, member_id)
);
CREATE UNIQUE INDEX referral_codes_tenant_code ON referral_codes (tenant_id, code);

-- Status pending + payment_due_at NULL: waiting for the referee's first purchase.
-- Status pending + payment_due_at set: bonuses due (being paid, or to be finished by a retry or
-- the sweeper). payment_attempt_at is the lease of whoever is paying right now.
CREATE TABLE referrals (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  card_id bigint NOT NULL,
  referrer_id bigint NOT NULL,
  referee_id bigint NOT NULL,
  code text NOT NULL,
  referrer_bonus integer NOT NULL CHECK (referrer_bonus >= 0),
  referee_bonus integer NOT NULL CHECK (referee_bonus >= 0),
  status text NOT NULL CHECK (status IN ('pending', 'completed')),
  payment_due_at timestamptz,
  payment_attempt_at timestamptz,
  referrer_transaction_id bigint,
  referee_transaction_id bigint,
  created_at timestamptz NOT NULL,
  completed_at timestamptz,
  CONSTRAINT referrals_one_per_referee UNIQUE (card_id, referee_id),
  CHECK (referrer_id <> referee_id),
  CHECK (status = 'pending' OR payment_due_at IS NOT NULL)
);
-- Statistics by period and top referrers: index-only scans over one card's referrals.
CREATE INDEX referrals_card_created ON referrals (card_id, created_at) INCLUDE (status);
CREATE INDEX referrals_card_referrer ON referrals (card_id, referrer_id, created_at) INCLUDE (status);
-- The sweeper's work list stays tiny: only referrals whose payment is due and unfinished.
CREATE INDEX referrals_payment_due ON referrals (payment_due_at) WHERE status = 'pending' AND payment_due_at IS NOT NULL;
-- The first-purchase consumer finds a referee's referral through referrals_one_per_referee.

-- Down Migration
DROP TABLE referrals, referral_codes;
