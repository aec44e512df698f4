-- Up Migration
-- The language a member's mail is written in (null: the tenant's default language).
ALTER TABLE members ADD COLUMN locale text CHECK (locale IN ('en', 'fr', 'ar'));

-- Down Migration
ALTER TABLE members DROP COLUMN locale;
