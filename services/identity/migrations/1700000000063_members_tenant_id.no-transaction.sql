-- Up Migration
-- The members export reads a tenant's members in id order from a keyset: one index range scan a page.
CREATE INDEX CONCURRENTLY IF NOT EXISTS members_tenant_id ON members (tenant_id, id);

-- Down Migration
DROP INDEX IF EXISTS members_tenant_id;
