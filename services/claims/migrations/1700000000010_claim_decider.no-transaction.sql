-- Up Migration
-- Who decided a claim (the audit actor: a staff user, or the app of a merchant API call), kept on the
-- request when its approval starts, so that an approval finished later (a retry, the sweeper) is
-- audited with the one who started it. The queue's index is built CONCURRENTLY, outside a
-- transaction (claim requests grow with every claim), so claims go on meanwhile.
ALTER TABLE claim_requests ADD COLUMN IF NOT EXISTS decided_by jsonb;
CREATE INDEX CONCURRENTLY IF NOT EXISTS claim_requests_queue ON claim_requests (tenant_id, (status IN ('pending', 'approving')) DESC, created_at DESC, id DESC);

-- Down Migration
DROP INDEX claim_requests_queue;
ALTER TABLE claim_requests DROP COLUMN decided_by;
