-- Up Migration
-- Members merged into another member (identity's merge job asked the ledger to move their
-- accounts). The ledger keeps the pointer so that what still names the source after the merge
-- lands on the target: a credit or a hold another service asks for (a referral bonus, a claim
-- made before the merge), and a refund naming a purchase the source made.
CREATE TABLE merged_members (
  tenant_id bigint NOT NULL,
  source_member_id bigint PRIMARY KEY,
  target_member_id bigint NOT NULL,
  merged_at timestamptz NOT NULL,
  CHECK (source_member_id <> target_member_id)
);

-- Down Migration
DROP TABLE merged_members;
