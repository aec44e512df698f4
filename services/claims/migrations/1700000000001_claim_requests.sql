-- Up Migration
-- Reward claim requests. The reward's name and points cost are copied at creation: the member asked
-- for that reward at that price, and a retried approval must debit exactly the same points.
CREATE TABLE claim_requests (
  id bigserial PRIMARY KEY,
  tenant_id bigint NOT NULL,
  card_id bigint NOT NULL,
  member_id bigint NOT NULL,
  reward_id bigint NOT NULL,
  reward_name text NOT NULL,
  points_cost bigint NOT NULL CHECK (points_cost >= 0),
  -- 'approving': an approval has started and owns the request until it ends (see approval.ts).
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approving', 'approved', 'rejected', 'expired')),
  member_note text,
  staff_note text,
  points_deducted bigint,
  ledger_transaction_id bigint,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  approval_started_at timestamptz,
  -- Which approval attempt holds the request; only that attempt may hand it back to pending.
  approval_attempt uuid,
  approved_at timestamptz,
  rejected_at timestamptz,
  expired_at timestamptz,
  CHECK (status <> 'approved' OR (points_deducted IS NOT NULL AND approved_at IS NOT NULL)),
  CHECK (status <> 'approving' OR approval_started_at IS NOT NULL)
);
CREATE INDEX claim_requests_card ON claim_requests (tenant_id, card_id, created_at DESC, id DESC);
CREATE INDEX claim_requests_due ON claim_requests (expires_at) WHERE status = 'pending';
CREATE INDEX claim_requests_approving ON claim_requests (approval_started_at) WHERE status = 'approving';

-- Down Migration
DROP TABLE claim_requests;
