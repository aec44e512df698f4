-- Up Migration
-- Holds: a claim request reserves its reward's points in the ledger when it is created
-- (under the key claim:<id>), the approval captures them, a rejection or an expiry releases them.
-- `holding`: the request exists while its hold is being placed; nobody sees it, and the sweeper
-- removes one left behind by a crash (releasing a hold it may have got).
-- hold_status: none (a request made before holds, or one whose reward costs nothing), held,
-- released, captured.
ALTER TABLE claim_requests DROP CONSTRAINT claim_requests_status_check;
ALTER TABLE claim_requests ADD CONSTRAINT claim_requests_status_check
  CHECK (status IN ('holding', 'pending', 'approving', 'approved', 'rejected', 'expired'));
ALTER TABLE claim_requests ADD COLUMN hold_status text NOT NULL DEFAULT 'none'
  CHECK (hold_status IN ('none', 'held', 'released', 'captured'));
-- Decided requests whose hold the ledger has still to give back.
CREATE INDEX claim_requests_hold_to_release ON claim_requests (id) WHERE hold_status = 'held' AND status IN ('rejected', 'expired');
CREATE INDEX claim_requests_holding ON claim_requests (created_at) WHERE status = 'holding';

-- Down Migration
DELETE FROM claim_requests WHERE status = 'holding';
DROP INDEX claim_requests_holding;
DROP INDEX claim_requests_hold_to_release;
ALTER TABLE claim_requests DROP COLUMN hold_status;
ALTER TABLE claim_requests DROP CONSTRAINT claim_requests_status_check;
ALTER TABLE claim_requests ADD CONSTRAINT claim_requests_status_check
  CHECK (status IN ('pending', 'approving', 'approved', 'rejected', 'expired'));
