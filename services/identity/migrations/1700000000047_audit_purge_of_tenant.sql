-- Up Migration
-- The audit log stays append-only, with one exception: the operator's purge of a whole tenant
-- (after its retention period) deletes the tenant's chain with everything else it had. The purge
-- job names the tenant in a transaction-local setting (`loyalty.purge_tenant`) before each batch;
-- a DELETE of that tenant's rows then passes, and anything else is refused as before.
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('loyalty.purge_tenant', true) = OLD.tenant_id::text THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'the audit log is append-only';
END $$;

-- Down Migration
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the audit log is append-only';
END $$;
