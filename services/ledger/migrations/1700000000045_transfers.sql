-- Up Migration
-- Points transfers between members of a tenant, and the lots they move. A transfer takes the
-- sender's spendable lots soonest-expiring first and gives the receiver lots with the same
-- available_at and expires_at (`source_lot_id` names the lot each came from), so points keep their
-- dates whoever holds them. Member merges (later migrations) move lots the same way.

-- Off by default; the cap counts what a member sends per calendar month in the card's time zone.
ALTER TABLE cards
  ADD COLUMN transfers_enabled boolean NOT NULL DEFAULT false,
  ADD COLUMN transfer_monthly_cap bigint CHECK (transfer_monthly_cap > 0);

-- Nullable, no default: adding it rewrites nothing.
ALTER TABLE lots ADD COLUMN source_lot_id bigint;

-- One row per transfer; its reference is unique per card (a retry with it answers this row).
CREATE TABLE transfers (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  card_id bigint NOT NULL,
  from_member_id bigint NOT NULL,
  to_member_id bigint NOT NULL,
  points bigint NOT NULL CHECK (points > 0),
  reference text NOT NULL,
  -- The sender's and the receiver's journal rows.
  out_journal_id bigint NOT NULL,
  in_journal_id bigint NOT NULL,
  -- What the request was answered (a retry with the reference is answered the same).
  answer jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  CHECK (from_member_id <> to_member_id),
  UNIQUE (card_id, reference)
);
-- The monthly cap sums a sender's transfers on a card since the month began.
CREATE INDEX transfers_sent ON transfers (card_id, from_member_id, created_at);

-- Move `amount` of account (card, from_member)'s spendable lots, soonest-expiring first, to
-- account (card, to_member) as new lots with the same dates. The caller holds both accounts' row
-- locks and changes their amounts itself. Answers the lots made (amount, dates), in the order taken.
CREATE FUNCTION move_spendable_lots(card bigint, from_member bigint, to_member bigint, tenant bigint, amount bigint, at timestamptz)
RETURNS TABLE (moved bigint, available_at timestamptz, expires_at timestamptz)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  need bigint := amount;
  take bigint;
  lot record;
BEGIN
  FOR lot IN
    SELECT l.id, l.remaining, l.available_at, l.expires_at, l.warn_at FROM ledger.lots l
     WHERE l.card_id = card AND l.member_id = from_member AND l.remaining > 0 AND NOT l.pending
     ORDER BY l.expires_at, l.id
  LOOP
    EXIT WHEN need = 0;
    take := least(lot.remaining, need);
    UPDATE ledger.lots SET remaining = remaining - take WHERE id = lot.id;
    INSERT INTO ledger.lots (tenant_id, card_id, member_id, journal_id, amount, remaining, pending, available_at, expires_at,
                             warn_at, created_at, source_lot_id)
    VALUES (tenant, card, to_member, NULL, take, take, false, lot.available_at, lot.expires_at, lot.warn_at, at, lot.id);
    need := need - take;
    moved := take;
    available_at := lot.available_at;
    expires_at := lot.expires_at;
    RETURN NEXT;
  END LOOP;
  IF need > 0 THEN
    RAISE EXCEPTION 'ledger: the spendable lots of account (card %, member %) are % short of a transfer the balance covered',
      card, from_member, need;
  END IF;
END
$$;

-- Down Migration
DROP FUNCTION move_spendable_lots(bigint, bigint, bigint, bigint, bigint, timestamptz);
DROP TABLE transfers;
ALTER TABLE lots DROP COLUMN source_lot_id;
ALTER TABLE cards DROP COLUMN transfer_monthly_cap, DROP COLUMN transfers_enabled;
