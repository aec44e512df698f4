-- Up Migration
-- Where the platform writes to a tenant about its integration (today: a webhook endpoint it disabled
-- after three days of failed deliveries). Null: the operator's address (OPERATOR_EMAIL) is used.
ALTER TABLE tenants ADD COLUMN contact_email text;

-- Down Migration
ALTER TABLE tenants DROP COLUMN contact_email;
