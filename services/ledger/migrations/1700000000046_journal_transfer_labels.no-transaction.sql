-- Up Migration
-- Transfers and member merges write journal rows of their own labels: `points_transferred_out`
-- (the sender's), `points_transferred_in` (the receiver's) and `member_merged` (the source's
-- balances leaving, the target's arriving). The event CHECK is replaced as migration 21 did it,
-- without blocking writes: the wider constraint added NOT VALID, validated while writes go on, the
-- old one dropped. Every statement can run twice.
ALTER TABLE journal DROP CONSTRAINT IF EXISTS journal_event_labels_46;
ALTER TABLE journal ADD CONSTRAINT journal_event_labels_46 CHECK (event IN ('event_bonus', 'staff_adjustment', 'cashback_earned', 'cashback_redeemed', 'cashback_refunded', 'staff_added_points', 'staff_redeemed_reward', 'points_refunded', 'reward_claimed', 'referral_bonus', 'points_expired', 'cashback_expired', 'points_transferred_out', 'points_transferred_in', 'member_merged')) NOT VALID;
ALTER TABLE journal VALIDATE CONSTRAINT journal_event_labels_46;
ALTER TABLE journal DROP CONSTRAINT IF EXISTS journal_event_labels;

-- Down Migration
SELECT 1;
