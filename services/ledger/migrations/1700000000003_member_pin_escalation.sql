-- Up Migration
-- Locks in a row since the member's last right PIN: each one doubles the next lock (domain/pin.ts),
-- so a guesser no longer gets a fresh set of attempts every 15 minutes forever.
ALTER TABLE member_pins ADD COLUMN consecutive_locks integer NOT NULL DEFAULT 0 CHECK (consecutive_locks >= 0);

-- Down Migration
ALTER TABLE member_pins DROP COLUMN consecutive_locks;
