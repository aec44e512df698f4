-- Up Migration
-- Points and cashback that live like money: every credit is a lot
-- with the moment it becomes spendable and the moment it expires; holds reserve spendable lots for
-- a pending claim. Amounts are the card's unit (cents or points), as everywhere in the ledger.

-- The card's lifecycle settings; they apply to credits made after they are set.
ALTER TABLE cards
  ADD COLUMN expiry_days integer CHECK (expiry_days BETWEEN 1 AND 36500),
  ADD COLUMN pending_days integer NOT NULL DEFAULT 0 CHECK (pending_days BETWEEN 0 AND 3650),
  ADD COLUMN expiry_warning_days integer NOT NULL DEFAULT 14 CHECK (expiry_warning_days BETWEEN 0 AND 3650);

-- An account's three amounts: `balance` is the spendable one (what the interface calls
-- points_balance / cashback_balance: available lots minus holds), `pending` waits for its lots'
-- available_at, `held` is reserved by holds. The journal sums to balance + pending + held.
-- `next_change_at` is never later than the next moment time alone changes the account (a pending
-- lot becoming available, a lot expiring); an earlier value only costs a settle that finds nothing.
ALTER TABLE accounts
  ADD COLUMN pending bigint NOT NULL DEFAULT 0 CHECK (pending >= 0),
  ADD COLUMN held bigint NOT NULL DEFAULT 0 CHECK (held >= 0),
  ADD COLUMN next_change_at timestamptz;
ALTER TABLE accounts DROP CONSTRAINT accounts_balance_limit;
ALTER TABLE accounts ADD CONSTRAINT accounts_balance_limit CHECK (balance + pending + held <= 1000000000000000);
CREATE INDEX accounts_due ON accounts (next_change_at) WHERE next_change_at IS NOT NULL;

-- One row per credit. `remaining` is what is left of it that no debit took and no hold reserves;
-- it changes only while the account's row is locked (see store/lots.ts).
CREATE TABLE lots (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  card_id bigint NOT NULL,
  member_id bigint NOT NULL,
  -- The credit's journal row (null: a balance carried over by this migration).
  journal_id bigint,
  amount bigint NOT NULL CHECK (amount > 0),
  remaining bigint NOT NULL CHECK (remaining >= 0 AND remaining <= amount),
  -- Not yet spendable: counted in the account's `pending` until it matures at available_at.
  pending boolean NOT NULL,
  available_at timestamptz NOT NULL,
  -- null: never expires.
  expires_at timestamptz,
  -- When the member is told of the expiry (expires_at - the card's expiry_warning_days), and whether they were.
  warn_at timestamptz,
  warned boolean NOT NULL DEFAULT false,
  expired_at timestamptz,
  created_at timestamptz NOT NULL,
  CHECK (expires_at IS NULL OR expires_at > available_at),
  FOREIGN KEY (card_id, member_id) REFERENCES accounts (card_id, member_id)
);
-- Debits take spendable lots soonest-expiring first (never-expiring last), oldest first among equals.
CREATE INDEX lots_spending ON lots (card_id, member_id, expires_at, id) WHERE remaining > 0 AND NOT pending;
CREATE INDEX lots_pending ON lots (card_id, member_id, available_at) WHERE pending;
-- A refund naming a purchase finds the purchase's lot through its journal row.
CREATE UNIQUE INDEX lots_credit ON lots (journal_id) WHERE journal_id IS NOT NULL;
CREATE INDEX lots_warning_due ON lots (warn_at) WHERE NOT warned AND remaining > 0 AND warn_at IS NOT NULL;

-- A reservation of spendable points (or cents) for a claim request, under the claim's key.
CREATE TABLE holds (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  card_id bigint NOT NULL,
  member_id bigint NOT NULL,
  key text NOT NULL,
  amount bigint NOT NULL CHECK (amount > 0),
  status text NOT NULL CHECK (status IN ('held', 'captured', 'released')),
  -- The ledger releases a hold still held at this time itself (its claim's lifetime plus a margin).
  expires_at timestamptz NOT NULL,
  -- The capture's journal row.
  journal_id bigint,
  created_at timestamptz NOT NULL,
  settled_at timestamptz,
  UNIQUE (tenant_id, key),
  FOREIGN KEY (card_id, member_id) REFERENCES accounts (card_id, member_id)
);
CREATE INDEX holds_due ON holds (expires_at) WHERE status = 'held';

-- Which lots a hold took its amount from: a release gives each back to its lot.
CREATE TABLE hold_lots (
  hold_id bigint NOT NULL REFERENCES holds (id),
  lot_id bigint NOT NULL REFERENCES lots (id),
  amount bigint NOT NULL CHECK (amount > 0),
  PRIMARY KEY (hold_id, lot_id)
);

ALTER TABLE journal DROP CONSTRAINT journal_event_check;
ALTER TABLE journal ADD CONSTRAINT journal_event_check CHECK (event IN ('cashback_earned', 'cashback_redeemed', 'cashback_refunded',
  'staff_added_points', 'staff_redeemed_reward', 'points_refunded', 'reward_claimed', 'referral_bonus',
  'points_expired', 'cashback_expired'));

-- Existing balances: one spendable lot each that never expires.
INSERT INTO lots (tenant_id, card_id, member_id, journal_id, amount, remaining, pending, available_at, expires_at, created_at)
SELECT tenant_id, card_id, member_id, NULL, balance, balance, false, now(), NULL, now() FROM accounts WHERE balance > 0;

-- Take `amounts[i]` from the spendable lots of account (cards[i], members[i]), soonest-expiring
-- first; with holds[i], record what the hold took from each lot. The caller holds each account's
-- row lock (it has just debited the balance), and this function is VOLATILE: in READ COMMITTED
-- each of its queries takes a fresh snapshot, so it sees every lot change committed before that
-- lock was granted, even when it is called from inside the statement that took the lock.
CREATE FUNCTION take_from_lots(cards bigint[], members bigint[], amounts bigint[], holds bigint[] DEFAULT NULL)
RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  i integer;
  need bigint;
  take bigint;
  lot record;
BEGIN
  IF cards IS NULL THEN
    RETURN 0;
  END IF;
  FOR i IN 1 .. cardinality(cards) LOOP
    need := amounts[i];
    CONTINUE WHEN need <= 0;
    FOR lot IN
      SELECT id, remaining FROM ledger.lots
       WHERE card_id = cards[i] AND member_id = members[i] AND remaining > 0 AND NOT pending
       ORDER BY expires_at, id
    LOOP
      take := least(lot.remaining, need);
      UPDATE ledger.lots SET remaining = remaining - take WHERE id = lot.id;
      IF holds IS NOT NULL AND holds[i] IS NOT NULL THEN
        INSERT INTO ledger.hold_lots (hold_id, lot_id, amount) VALUES (holds[i], lot.id, take);
      END IF;
      need := need - take;
      EXIT WHEN need = 0;
    END LOOP;
    IF need > 0 THEN
      RAISE EXCEPTION 'ledger: the spendable lots of account (card %, member %) are % short of a debit the balance covered',
        cards[i], members[i], need;
    END IF;
  END LOOP;
  RETURN cardinality(cards);
END
$$;

-- Down Migration
-- Expiry rows have no label in the version before; undoing lots after something expired would
-- lose that history, so it is refused.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM journal WHERE event IN ('points_expired', 'cashback_expired')) THEN
    RAISE EXCEPTION 'lots cannot be undone: points or cashback have already expired';
  END IF;
END
$$;
DROP FUNCTION take_from_lots(bigint[], bigint[], bigint[], bigint[]);
ALTER TABLE journal DROP CONSTRAINT journal_event_check;
ALTER TABLE journal ADD CONSTRAINT journal_event_check CHECK (event IN ('cashback_earned', 'cashback_redeemed', 'cashback_refunded',
  'staff_added_points', 'staff_redeemed_reward', 'points_refunded', 'reward_claimed', 'referral_bonus'));
DROP TABLE hold_lots;
DROP TABLE holds;
DROP TABLE lots;
ALTER TABLE accounts DROP CONSTRAINT accounts_balance_limit;
UPDATE accounts SET balance = balance + pending + held;
ALTER TABLE accounts DROP COLUMN pending, DROP COLUMN held, DROP COLUMN next_change_at;
ALTER TABLE accounts ADD CONSTRAINT accounts_balance_limit CHECK (balance <= 1000000000000000);
ALTER TABLE cards DROP COLUMN expiry_days, DROP COLUMN pending_days, DROP COLUMN expiry_warning_days;
