import { z } from 'zod';
import { Email, IdParam, Text } from '../common.ts';
import { defineOperations } from './types.ts';

/**
 * A tenant's mail (operator API under /admin/v1, `npm run admin -- tenant:mail`): the branding of
 * every message (sender name, logo, colours, footer), the default language of members without
 * one, a Reply-To, and optionally the merchant's own SMTP server (its password write-only, stored
 * sealed). docs/decisions/mail.md.
 */
const base = {
  service: 'identity',
  scope: null,
  memberToken: false,
  idempotent: false,
  tag: 'Mail (operator)',
} as const;
const TenantParams = z.object({ tenant_id: IdParam });

export const MailLocale = z.enum(['en', 'fr', 'ar']).describe('en, fr or ar (right to left)');
const Color = Text.regex(/^#[0-9a-fA-F]{6}$/, 'must be a colour as #rrggbb');
const Line = (max: number) =>
  Text.trim()
    .min(1)
    .max(max)
    .regex(/^[^\r\n]*$/, 'must be one line');
const HttpsUrl = Text.trim()
  .max(500)
  .refine((v) => {
    try {
      return new URL(v).protocol === 'https:';
    } catch {
      return false;
    }
  }, 'must be an https URL');
const Host = Text.trim()
  .min(1)
  .max(253)
  .regex(/^[A-Za-z0-9.-]+$/, 'must be a host name or IPv4 address');

const SmtpSettings = z
  .object({
    host: z.string(),
    port: z.number().int(),
    secure: z.boolean().describe('TLS from the start (port 465); false: STARTTLS when offered'),
    username: z.string().nullable(),
    password_set: z.boolean().describe('whether a password is stored (never shown)'),
  })
  .meta({ id: 'TenantSmtpSettings' });

export const TenantMailSettings = z
  .object({
    tenant_id: z.number().int(),
    sender_name: z.string().nullable().describe("the From display name (the tenant's name when null)"),
    from_address: z
      .string()
      .nullable()
      .describe("the From address (the platform's MAIL_FROM address when null); use one the SMTP server may send as"),
    reply_to: z.string().nullable(),
    logo_url: z.string().nullable(),
    primary_color: z.string(),
    background_color: z.string(),
    postal_address: z.string().nullable(),
    contact: z.string().nullable(),
    default_locale: MailLocale,
    smtp: SmtpSettings.nullable().describe("the merchant's own SMTP server (null: the platform's)"),
  })
  .meta({ id: 'TenantMailSettings' });

export const TenantMailSettingsBody = z.object({
  sender_name: Line(100).nullable().default(null),
  from_address: Email.nullable().default(null),
  reply_to: Email.nullable().default(null),
  logo_url: HttpsUrl.nullable().default(null),
  primary_color: Color.default('#1f4e79'),
  background_color: Color.default('#f4f4f4'),
  postal_address: Line(300).nullable().default(null),
  contact: Line(200).nullable().default(null),
  default_locale: MailLocale.default('en'),
  smtp: z
    .object({
      host: Host,
      port: z.number().int().min(1).max(65535).default(587),
      secure: z.boolean().default(false),
      username: Text.trim().min(1).max(200).nullable().default(null),
      password: Text.min(1)
        .max(500)
        .optional()
        .describe('write-only; omitted: the stored password is kept (for the same host and username)'),
    })
    .nullable()
    .default(null),
});

export const mailOperations = defineOperations({
  'admin.tenant.mail.get': {
    ...base,
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/mail',
    operation: 'admin.tenant.mail.get',
    summary: "A tenant's mail settings: branding, default language, Reply-To, SMTP server (never its password)",
    params: TenantParams,
    response: z.object({ mail: TenantMailSettings }),
    errors: ['invalid_operator_token', 'tenant_not_found'],
  },
  'admin.tenant.mail.update': {
    ...base,
    method: 'PUT',
    path: '/admin/v1/tenants/:tenant_id/mail',
    operation: 'admin.tenant.mail.update',
    summary:
      "Set a tenant's mail settings (all of them: an omitted field takes its default); an SMTP password is stored sealed",
    params: TenantParams,
    body: TenantMailSettingsBody,
    response: z.object({ mail: TenantMailSettings }),
    errors: ['invalid_operator_token', 'tenant_not_found', 'secrets_key_missing'],
  },
});

/** A member's language (scope `members_manage`, like consents): set at registration, changed here. */
export const memberLocaleOperations = defineOperations({
  'members.locale.update': {
    service: 'identity',
    scope: 'members_manage',
    memberToken: false,
    idempotent: false,
    tag: 'Member data',
    method: 'PUT',
    path: '/api/v1/members/:member_id/locale',
    operation: 'members.locale.update',
    summary: "Set the language of a member's mail (null: the tenant's default language)",
    params: z.object({ member_id: IdParam }),
    body: z.object({ locale: MailLocale.nullable() }),
    response: z.object({
      member_id: z.number().int(),
      locale: MailLocale.nullable(),
      mail_locale: MailLocale.describe("the language the member's mail is written in now"),
    }),
    errors: ['member_not_found'],
  },
});

const mail = {
  tenant_id: 3,
  sender_name: 'Café Atlas',
  from_address: 'fidelite@cafe-atlas.example',
  reply_to: 'bonjour@cafe-atlas.example',
  logo_url: 'https://cdn.cafe-atlas.example/logo.png',
  primary_color: '#8a1c2b',
  background_color: '#f4f4f4',
  postal_address: '12 Boulevard Anfa, 20000 Casablanca',
  contact: 'bonjour@cafe-atlas.example',
  default_locale: 'fr' as const,
  smtp: { host: 'smtp.cafe-atlas.example', port: 587, secure: false, username: 'fidelite', password_set: true },
};

export const mailExamples = {
  'members.locale.update': {
    request: { locale: 'ar' },
    response: { member_id: 42, locale: 'ar', mail_locale: 'ar' },
  },
  'admin.tenant.mail.get': { response: { mail } },
  'admin.tenant.mail.update': {
    request: {
      sender_name: mail.sender_name,
      from_address: mail.from_address,
      reply_to: mail.reply_to,
      logo_url: mail.logo_url,
      primary_color: mail.primary_color,
      postal_address: mail.postal_address,
      contact: mail.contact,
      default_locale: mail.default_locale,
      smtp: { host: 'smtp.cafe-atlas.example', port: 587, username: 'fidelite', password: 'app-password' },
    },
    response: { mail },
  },
};
