import type { Queryable } from '@loyalty/runtime';

/** A tenant's mail settings row (identity.tenant_mail_settings); the SMTP password as stored (sealed). */
export interface TenantMailRow {
  tenant_id: number;
  tenant_name: string;
  sandbox: boolean;
  sender_name: string | null;
  from_address: string | null;
  reply_to: string | null;
  logo_url: string | null;
  primary_color: string | null;
  background_color: string | null;
  postal_address: string | null;
  contact: string | null;
  default_locale: string | null;
  smtp_host: string | null;
  smtp_port: number | null;
  smtp_secure: boolean | null;
  smtp_username: string | null;
  smtp_password: string | null;
  /**
   * The tenant's own templates as a stamp, `count:highest revision` (`0:0` without any): changed by
   * every save and reset, so kept templates are read again only when they changed.
   */
  templates_stamp: string;
}

/** The tenant and its mail settings (all null when it has none): one read per message. */
export async function findTenantMail(db: Queryable, tenantId: number): Promise<TenantMailRow | undefined> {
  const { rows } = await db.query<TenantMailRow>(
    `SELECT t.id::int AS tenant_id, t.name AS tenant_name, t.sandbox, s.sender_name, s.from_address, s.reply_to,
            s.logo_url, s.primary_color, s.background_color, s.postal_address, s.contact, s.default_locale,
            s.smtp_host, s.smtp_port, s.smtp_secure, s.smtp_username, s.smtp_password,
            (SELECT count(*) || ':' || coalesce(max(m.revision), 0) FROM identity.mail_templates m
              WHERE m.tenant_id = t.id) AS templates_stamp
       FROM identity.tenants t LEFT JOIN identity.tenant_mail_settings s ON s.tenant_id = t.id
      WHERE t.id = $1`,
    [tenantId],
  );
  return rows[0];
}

export interface TenantMailValues {
  sender_name: string | null;
  from_address: string | null;
  reply_to: string | null;
  logo_url: string | null;
  primary_color: string;
  background_color: string;
  postal_address: string | null;
  contact: string | null;
  default_locale: string;
  smtp_host: string | null;
  smtp_port: number | null;
  smtp_secure: boolean | null;
  smtp_username: string | null;
  smtp_password: string | null;
}

export async function saveTenantMail(db: Queryable, tenantId: number, v: TenantMailValues, now: Date): Promise<void> {
  await db.query(
    `INSERT INTO identity.tenant_mail_settings AS s (tenant_id, sender_name, from_address, reply_to, logo_url,
        primary_color, background_color, postal_address, contact, default_locale, smtp_host, smtp_port, smtp_secure,
        smtp_username, smtp_password, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
     ON CONFLICT (tenant_id) DO UPDATE SET sender_name = $2, from_address = $3, reply_to = $4, logo_url = $5,
        primary_color = $6, background_color = $7, postal_address = $8, contact = $9, default_locale = $10,
        smtp_host = $11, smtp_port = $12, smtp_secure = $13, smtp_username = $14, smtp_password = $15, updated_at = $16`,
    [
      tenantId,
      v.sender_name,
      v.from_address,
      v.reply_to,
      v.logo_url,
      v.primary_color,
      v.background_color,
      v.postal_address,
      v.contact,
      v.default_locale,
      v.smtp_host,
      v.smtp_port,
      v.smtp_secure,
      v.smtp_username,
      v.smtp_password,
      now,
    ],
  );
}
