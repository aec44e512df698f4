-- Up Migration
-- A tenant's own template of a message kind in a language (subject and body in the Handlebars
-- subset of mail/render/template.ts, validated before it is saved); without one the default of
-- the catalog is used. Deleting the row resets the kind and language to the default.
-- `revision` is taken from a sequence at every save: a tenant's count of templates and their
-- highest revision tell a renderer whether the templates it keeps are still the tenant's.
CREATE SEQUENCE mail_template_revisions;
CREATE TABLE mail_templates (
  tenant_id bigint NOT NULL REFERENCES tenants (id),
  kind text NOT NULL,
  locale text NOT NULL CHECK (locale IN ('en', 'fr', 'ar')),
  subject text NOT NULL,
  body text NOT NULL,
  updated_by jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  revision bigint NOT NULL DEFAULT nextval('mail_template_revisions'),
  PRIMARY KEY (tenant_id, kind, locale)
);

-- Down Migration
DROP TABLE mail_templates;
DROP SEQUENCE mail_template_revisions;
