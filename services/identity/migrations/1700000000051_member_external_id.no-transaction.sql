-- Up Migration
-- An import finds members by (tenant, external_id); one external id names one member of a tenant.
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS members_tenant_external_id ON members (tenant_id, external_id) WHERE external_id IS NOT NULL;

-- Down Migration
DROP INDEX IF EXISTS members_tenant_external_id;
