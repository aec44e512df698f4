import type { Queryable } from '@loyalty/runtime';

/** A tenant's own template of a kind in a language (identity.mail_templates). */
export interface MailTemplateRow {
  kind: string;
  locale: string;
  subject: string;
  body: string;
  updated_by: Record<string, unknown>;
  updated_at: Date;
}

const COLUMNS = 'kind, locale, subject, body, updated_by, updated_at';

/** Every template a tenant wrote (at most one per kind and language: a few dozen rows). */
export async function tenantTemplates(db: Queryable, tenantId: number): Promise<MailTemplateRow[]> {
  const { rows } = await db.query<MailTemplateRow>(
    `SELECT ${COLUMNS} FROM identity.mail_templates WHERE tenant_id = $1 ORDER BY kind, locale`,
    [tenantId],
  );
  return rows;
}

export async function findTemplate(
  db: Queryable,
  tenantId: number,
  kind: string,
  locale: string,
): Promise<MailTemplateRow | undefined> {
  const { rows } = await db.query<MailTemplateRow>(
    `SELECT ${COLUMNS} FROM identity.mail_templates WHERE tenant_id = $1 AND kind = $2 AND locale = $3`,
    [tenantId, kind, locale],
  );
  return rows[0];
}

export async function saveTemplate(
  db: Queryable,
  tenantId: number,
  t: { kind: string; locale: string; subject: string; body: string; updated_by: Record<string, unknown> },
  now: Date,
): Promise<MailTemplateRow> {
  const { rows } = await db.query<MailTemplateRow>(
    `INSERT INTO identity.mail_templates (tenant_id, kind, locale, subject, body, updated_by, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (tenant_id, kind, locale) DO UPDATE SET subject = $4, body = $5, updated_by = $6, updated_at = $7,
       revision = nextval('identity.mail_template_revisions')
     RETURNING ${COLUMNS}`,
    [tenantId, t.kind, t.locale, t.subject, t.body, JSON.stringify(t.updated_by), now],
  );
  const [row] = rows;
  if (!row) throw new Error('the template upsert returned no row');
  return row;
}

/** Removes the tenant's template (the default is used again); whether there was one. */
export async function deleteTemplate(db: Queryable, tenantId: number, kind: string, locale: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `DELETE FROM identity.mail_templates WHERE tenant_id = $1 AND kind = $2 AND locale = $3`,
    [tenantId, kind, locale],
  );
  return (rowCount ?? 0) > 0;
}
