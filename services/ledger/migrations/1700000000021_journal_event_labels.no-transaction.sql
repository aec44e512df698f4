-- Up Migration
-- Member events give points as journal rows of their own label, `event_bonus`. The journal's event
-- CHECK is replaced without blocking writes on a large journal: the new constraint is added NOT
-- VALID (a brief lock, no scan of the rows), validated while writes go on (VALIDATE CONSTRAINT
-- holds a SHARE UPDATE EXCLUSIVE lock, which inserts and updates do not wait for), then the old
-- one is dropped. Each statement runs on its own; an interrupted run starts again from the first.
-- (A database that ran this migration's earlier form already allows `event_bonus`: the same list.)
ALTER TABLE journal DROP CONSTRAINT IF EXISTS journal_event_labels;
ALTER TABLE journal ADD CONSTRAINT journal_event_labels CHECK (event IN ('event_bonus', 'staff_adjustment', 'cashback_earned', 'cashback_redeemed', 'cashback_refunded', 'staff_added_points', 'staff_redeemed_reward', 'points_refunded', 'reward_claimed', 'referral_bonus', 'points_expired', 'cashback_expired')) NOT VALID;
ALTER TABLE journal VALIDATE CONSTRAINT journal_event_labels;
ALTER TABLE journal DROP CONSTRAINT IF EXISTS journal_event_check;

-- Down Migration
SELECT 1;
