-- Up Migration
-- Who decided a claim (the audit actor: a staff user, or the app of a merchant API call), kept on the
-- request when its approval starts, so that an approval finished later (a retry, the sweeper) is
-- audited with the one who started it.
ALTER TABLE claim_requests ADD COLUMN decided_by jsonb;
CREATE INDEX claim_requests_queue ON claim_requests (tenant_id, (status IN ('pending', 'approving')) DESC, created_at DESC, id DESC);

-- Down Migration
DROP INDEX claim_requests_queue;
ALTER TABLE claim_requests DROP COLUMN decided_by;
