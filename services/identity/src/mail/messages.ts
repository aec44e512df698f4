import type { Queryable } from '@loyalty/runtime';
import { tenantTemplates } from '../store/mail-templates.ts';
import { findTenantMail } from '../store/tenant-mail.ts';
import type { MailRoute } from './mailer.ts';
import type { SmtpSecrets } from './smtp-secrets.ts';
import {
  DEFAULT_BACKGROUND,
  DEFAULT_PRIMARY,
  Formatter,
  isLocale,
  renderMail,
  type Branding,
  type Locale,
  type MailKindName,
  type RenderedMail,
  type TemplateText,
  type Vars,
} from './render/index.ts';

/**
 * What a tenant's mail looks like and says: its branding, its default locale and its own
 * templates. Read from the tenant's row when a message is rendered (a consumer's transaction, a
 * code's request).
 */
export interface TenantMail {
  tenantId: number;
  sandbox: boolean;
  branding: Branding;
  locale: Locale;
  /** The tenant's own templates by `kind:locale` (none: every message is the default). */
  templates?: ReadonlyMap<string, TemplateText> | undefined;
  /** From, Reply-To and the tenant's own SMTP server (its password still sealed). */
  sender?: {
    name: string;
    address: string | null;
    replyTo: string | null;
    smtp: {
      host: string;
      port: number;
      secure: boolean;
      username: string | null;
      sealedPassword: string | null;
    } | null;
  };
}

/**
 * Tenants' own templates as last read, with the stamp they were read at (`count:highest revision`
 * of identity.mail_templates, read with the tenant's row at no extra query). A tenant without
 * templates (`0:0`) costs no read and no entry; a save or reset anywhere changes the stamp, so
 * every replica reads the templates again at its next message of that tenant.
 */
const kept = new Map<number, { stamp: string; templates: ReadonlyMap<string, TemplateText> }>();
const KEPT_MAX = 5_000;
const NO_TEMPLATES = '0:0';

export const templateKey = (kind: MailKindName, locale: Locale) => `${kind}:${locale}`;

async function templatesOf(
  db: Queryable,
  tenantId: number,
  stamp: string,
): Promise<ReadonlyMap<string, TemplateText> | undefined> {
  if (stamp === NO_TEMPLATES) {
    kept.delete(tenantId);
    return undefined;
  }
  const k = kept.get(tenantId);
  if (k?.stamp === stamp) return k.templates;
  const rows = await tenantTemplates(db, tenantId);
  const templates = new Map(rows.map((r) => [`${r.kind}:${r.locale}`, { subject: r.subject, body: r.body }]));
  const oldest = kept.keys().next();
  if (kept.size >= KEPT_MAX && !oldest.done) kept.delete(oldest.value);
  kept.set(tenantId, { stamp, templates });
  return templates;
}

export async function tenantMail(db: Queryable, tenantId: number): Promise<TenantMail | undefined> {
  const t = await findTenantMail(db, tenantId);
  if (!t) return undefined;
  const name = t.sender_name ?? t.tenant_name;
  return {
    tenantId,
    templates: await templatesOf(db, tenantId, t.templates_stamp),
    sandbox: t.sandbox,
    branding: {
      name,
      logo_url: t.logo_url,
      primary_color: t.primary_color ?? DEFAULT_PRIMARY,
      background_color: t.background_color ?? DEFAULT_BACKGROUND,
      postal_address: t.postal_address,
      contact: t.contact,
    },
    locale: isLocale(t.default_locale) ? t.default_locale : 'en',
    sender: {
      name,
      address: t.from_address,
      replyTo: t.reply_to,
      smtp:
        t.smtp_host && t.smtp_port
          ? {
              host: t.smtp_host,
              port: t.smtp_port,
              secure: t.smtp_secure ?? false,
              username: t.smtp_username,
              sealedPassword: t.smtp_password,
            }
          : null,
    },
  };
}

/** Where a tenant's mail goes from and through, its SMTP password opened (outside any transaction). */
export async function routeOf(db: Queryable, secrets: SmtpSecrets, t: TenantMail | undefined): Promise<MailRoute> {
  const s = t?.sender;
  if (!t || !s) return {};
  const smtp = s.smtp
    ? {
        host: s.smtp.host,
        port: s.smtp.port,
        secure: s.smtp.secure,
        username: s.smtp.username,
        password: s.smtp.sealedPassword ? await secrets.open(db, t.tenantId, s.smtp.sealedPassword) : null,
      }
    : undefined;
  return {
    fromName: s.name,
    fromAddress: s.address ?? undefined,
    replyTo: s.replyTo ?? undefined,
    smtp,
  };
}

/** A message of `kind` for a tenant, in `locale` (the member's, else the tenant's default). */
export async function renderFor(
  t: TenantMail,
  kind: MailKindName,
  vars: (f: Formatter, locale: Locale) => Vars,
  o: { locale?: Locale | null | undefined; timeZone?: string | undefined; unsubscribeUrl?: string | undefined } = {},
): Promise<RenderedMail> {
  const locale = o.locale ?? t.locale;
  const input = {
    kind,
    locale,
    vars: vars(new Formatter(locale, o.timeZone), locale),
    branding: t.branding,
    unsubscribeUrl: o.unsubscribeUrl,
  };
  const template = t.templates?.get(templateKey(kind, locale));
  if (!template) return renderMail(input);
  // Saved templates were validated; one the engine still cannot run is not worth a lost mail.
  return renderMail({ ...input, template }).catch(() => renderMail(input));
}
