-- Up Migration
-- A member's referrals by member, across cards (a merge moves them to the target member).
CREATE INDEX CONCURRENTLY IF NOT EXISTS referrals_referrer ON referrals (referrer_id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS referrals_referee ON referrals (referee_id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS referral_codes_member ON referral_codes (member_id);

-- Down Migration
DROP INDEX IF EXISTS referral_codes_member;
DROP INDEX IF EXISTS referrals_referee;
DROP INDEX IF EXISTS referrals_referrer;
