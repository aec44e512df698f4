import {
  AppError,
  type AdminMeta,
  type StaffMailSettingsBody,
  type StaffMeta,
  type TenantMailSettingsBody,
} from '@loyalty/contracts';
import { auditActor, recordAudit, withTransaction, type Clock, type Outbox, type Pool } from '@loyalty/runtime';
import type { z } from 'zod';
import type { SmtpSecrets } from '../mail/smtp-secrets.ts';
import { DEFAULT_BACKGROUND, DEFAULT_PRIMARY, isLocale } from '../mail/render/index.ts';
import { findTenantMail, saveTenantMail, type TenantMailRow } from '../store/tenant-mail.ts';

type Body = z.output<typeof TenantMailSettingsBody>;

function view(r: TenantMailRow) {
  return {
    tenant_id: r.tenant_id,
    sender_name: r.sender_name,
    from_address: r.from_address,
    reply_to: r.reply_to,
    logo_url: r.logo_url,
    primary_color: r.primary_color ?? DEFAULT_PRIMARY,
    background_color: r.background_color ?? DEFAULT_BACKGROUND,
    postal_address: r.postal_address,
    contact: r.contact,
    default_locale: isLocale(r.default_locale) ? r.default_locale : 'en',
    smtp:
      r.smtp_host && r.smtp_port
        ? {
            host: r.smtp_host,
            port: r.smtp_port,
            secure: r.smtp_secure ?? false,
            username: r.smtp_username,
            password_set: r.smtp_password !== null,
          }
        : null,
  };
}

/**
 * A tenant's mail settings through the operator API (and `npm run admin -- tenant:mail`): read,
 * and replaced as a whole, audited. An SMTP password is stored sealed (mail/smtp-secrets.ts) and
 * never answered; omitted, the stored one is kept while the host and username stay the same.
 */
export function tenantMailSettings(deps: { pool: Pool; clock: Clock; outbox: Outbox; secrets: SmtpSecrets }) {
  return {
    async get(d: { tenant_id: number }) {
      const row = await findTenantMail(deps.pool, d.tenant_id);
      if (!row) throw new AppError('tenant_not_found');
      return { mail: view(row) };
    },
    async update(d: Body & { tenant_id: number }, meta: AdminMeta) {
      if (d.smtp?.password !== undefined && !deps.secrets.available) throw new AppError('secrets_key_missing');
      return withTransaction(deps.pool, async (db) => {
        const before = await findTenantMail(db, d.tenant_id);
        if (!before) throw new AppError('tenant_not_found');
        const smtp = d.smtp;
        const sameServer = smtp && before.smtp_host === smtp.host && before.smtp_username === smtp.username;
        const password =
          smtp?.password !== undefined
            ? await deps.secrets.seal(db, d.tenant_id, smtp.password)
            : sameServer
              ? before.smtp_password
              : null;
        await saveTenantMail(
          db,
          d.tenant_id,
          {
            sender_name: d.sender_name,
            from_address: d.from_address,
            reply_to: d.reply_to,
            logo_url: d.logo_url,
            primary_color: d.primary_color,
            background_color: d.background_color,
            postal_address: d.postal_address,
            contact: d.contact,
            default_locale: d.default_locale,
            smtp_host: smtp?.host ?? null,
            smtp_port: smtp?.port ?? null,
            smtp_secure: smtp?.secure ?? null,
            smtp_username: smtp?.username ?? null,
            smtp_password: password,
          },
          deps.clock.now(),
        );
        await recordAudit(deps.outbox, db, d.tenant_id, {
          actor: auditActor(meta),
          action: 'tenant.mail_updated',
          target: { tenant_id: d.tenant_id },
          details: {
            default_locale: d.default_locale,
            own_smtp: smtp !== null,
            smtp_password_changed: smtp?.password !== undefined,
          },
          request_id: meta.request_id,
        });
        const after = await findTenantMail(db, d.tenant_id);
        if (!after) throw new AppError('tenant_not_found');
        return { mail: view(after) };
      });
    },
  };
}

/** The branding part of the settings, as managers see it in the console. */
function brandingView(r: TenantMailRow) {
  const v = view(r);
  return {
    sender_name: v.sender_name,
    reply_to: v.reply_to,
    logo_url: v.logo_url,
    primary_color: v.primary_color,
    background_color: v.background_color,
    postal_address: v.postal_address,
    contact: v.contact,
    default_locale: v.default_locale,
  };
}

/**
 * A tenant's mail branding through the staff API (managers; the console's Mail page): sender name,
 * Reply-To, logo, colours, footer and default language, replaced as a whole and audited like the
 * operator's change. The From address and the SMTP server are kept as the operator set them.
 */
export function staffMailSettings(deps: { pool: Pool; clock: Clock; outbox: Outbox }) {
  return {
    async get(meta: StaffMeta) {
      const row = await findTenantMail(deps.pool, meta.tenant_id);
      if (!row) throw new AppError('tenant_not_found');
      return { mail: brandingView(row) };
    },
    async update(d: z.output<typeof StaffMailSettingsBody>, meta: StaffMeta) {
      return withTransaction(deps.pool, async (db) => {
        const before = await findTenantMail(db, meta.tenant_id);
        if (!before) throw new AppError('tenant_not_found');
        await saveTenantMail(
          db,
          meta.tenant_id,
          {
            ...d,
            from_address: before.from_address,
            smtp_host: before.smtp_host,
            smtp_port: before.smtp_port,
            smtp_secure: before.smtp_secure,
            smtp_username: before.smtp_username,
            smtp_password: before.smtp_password,
          },
          deps.clock.now(),
        );
        await recordAudit(deps.outbox, db, meta.tenant_id, {
          actor: auditActor(meta),
          action: 'tenant.mail_updated',
          target: { tenant_id: meta.tenant_id },
          details: { default_locale: d.default_locale, branding_only: true },
          request_id: meta.request_id,
        });
        const after = await findTenantMail(db, meta.tenant_id);
        if (!after) throw new AppError('tenant_not_found');
        return { mail: brandingView(after) };
      });
    },
  };
}
