-- Up Migration
-- Cards, rewards, balances (one account per member x card), the append-only journal, member PINs.
-- Money is in integer cents (bigint), points are integers, rates are exact numerics. (The outbox is
-- one of the runtime's shared tables.)

CREATE TABLE cards (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  unique_identifier text NOT NULL,
  name text NOT NULL,
  description text NOT NULL DEFAULT '',
  reward_system text NOT NULL CHECK (reward_system IN ('cashback', 'points')),
  currency char(3) NOT NULL DEFAULT 'USD',
  -- cashback cards
  cashback_percentage numeric(7, 4) CHECK (cashback_percentage BETWEEN 0 AND 100),
  cashback_min_cents bigint CHECK (cashback_min_cents >= 0),
  cashback_max_cents bigint CHECK (cashback_max_cents >= 0),
  allows_pin_redemption boolean NOT NULL DEFAULT false,
  -- points cards: points per unit of currency
  points_ratio numeric(14, 6) CHECK (points_ratio > 0),
  -- referral and claim settings (read by the referrals and claims services)
  referrer_bonus bigint NOT NULL DEFAULT 0 CHECK (referrer_bonus >= 0),
  referee_bonus bigint NOT NULL DEFAULT 0 CHECK (referee_bonus >= 0),
  referral_bonus_on_first_purchase boolean NOT NULL DEFAULT false,
  claim_lifetime_hours integer NOT NULL DEFAULT 72 CHECK (claim_lifetime_hours > 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, unique_identifier),
  CHECK (
    (reward_system = 'cashback' AND cashback_percentage IS NOT NULL AND cashback_min_cents IS NOT NULL AND points_ratio IS NULL)
    OR (reward_system = 'points' AND points_ratio IS NOT NULL AND cashback_percentage IS NULL)
  )
);
CREATE INDEX cards_tenant ON cards (tenant_id, id);

CREATE TABLE rewards (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  card_id bigint NOT NULL REFERENCES cards (id),
  name text NOT NULL,
  description text NOT NULL DEFAULT '',
  points_cost bigint NOT NULL CHECK (points_cost > 0),
  active boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rewards_card ON rewards (card_id, id);

-- The stored balance of a member on a card: cents on a cashback card, points on a points card.
-- It always equals the sum of the account's journal amounts and never goes below zero.
CREATE TABLE accounts (
  card_id bigint NOT NULL REFERENCES cards (id),
  member_id bigint NOT NULL,
  tenant_id bigint NOT NULL,
  balance bigint NOT NULL DEFAULT 0 CHECK (balance >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (card_id, member_id)
);

-- Append-only: one row per balance change (amount signed: cents or points), never updated.
CREATE TABLE journal (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  card_id bigint NOT NULL,
  member_id bigint NOT NULL,
  event text NOT NULL CHECK (event IN ('cashback_earned', 'cashback_redeemed', 'cashback_refunded', 'staff_added_points',
                                       'staff_redeemed_reward', 'points_refunded', 'reward_claimed', 'referral_bonus')),
  amount bigint NOT NULL,
  balance_after bigint NOT NULL CHECK (balance_after >= 0),
  -- earn: the purchase; refund: the refunded amount (cents)
  purchase_cents bigint,
  -- earn: the purchase's reference (unique per card); refund: the reference of the refunded purchase
  reference text,
  reward_id bigint,
  metadata jsonb,
  created_at timestamptz NOT NULL,
  FOREIGN KEY (card_id, member_id) REFERENCES accounts (card_id, member_id)
);
-- History pages (newest first) and the count of one account stay index-only fast at any size.
CREATE INDEX journal_account_history ON journal (member_id, card_id, id DESC);
-- An earn's reference names one purchase per card.
CREATE UNIQUE INDEX journal_earn_reference ON journal (card_id, reference)
  WHERE reference IS NOT NULL AND event IN ('cashback_earned', 'staff_added_points');
-- Refunds already made on a purchase (the refund cap).
CREATE INDEX journal_refund_reference ON journal (card_id, reference)
  WHERE reference IS NOT NULL AND event IN ('cashback_refunded', 'points_refunded');

-- A member's redemption PIN (scrypt), with the wrong-PIN lock.
CREATE TABLE member_pins (
  tenant_id bigint NOT NULL,
  member_id bigint NOT NULL,
  pin_hash text NOT NULL,
  failed_attempts integer NOT NULL DEFAULT 0,
  locked_until timestamptz,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, member_id)
);


-- Down Migration
DROP TABLE member_pins;
DROP TABLE journal;
DROP TABLE accounts;
DROP TABLE rewards;
DROP TABLE cards;
