-- Up Migration
-- The Idempotency-Key of the apply that created a referral: a retry under the same key gets
-- the referral back even when the sweeper finished its payment in the meantime.
ALTER TABLE referrals ADD COLUMN apply_key text;

-- Down Migration
ALTER TABLE referrals DROP COLUMN apply_key;
