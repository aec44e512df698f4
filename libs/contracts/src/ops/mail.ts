import * as z from 'zod';
import { AuditActor } from '../audit.ts';
import { Email, IdParam, Text, Timestamp } from '../common.ts';
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

/** The branding part of a tenant's mail settings, which managers change in the console (not the sender address or SMTP server). */
export const StaffMailSettings = TenantMailSettings.pick({
  sender_name: true,
  reply_to: true,
  logo_url: true,
  primary_color: true,
  background_color: true,
  postal_address: true,
  contact: true,
  default_locale: true,
}).meta({ id: 'StaffMailSettings' });

export const StaffMailSettingsBody = TenantMailSettingsBody.pick({
  sender_name: true,
  reply_to: true,
  logo_url: true,
  primary_color: true,
  background_color: true,
  postal_address: true,
  contact: true,
  default_locale: true,
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

// ---- templates: a tenant's own subject and body per message kind and language ---------------------

/** Every message identity sends (services/identity/src/mail/render/catalog.ts, checked equal by its tests). */
export const MAIL_KINDS = [
  'member_code',
  'staff_code',
  'points_earned',
  'points_expiring',
  'cashback_expiring',
  'tier_downgrade_warning',
  'claim_approved',
  'claim_rejected',
  'endpoint_disabled',
] as const;
export const MailKind = z.enum(MAIL_KINDS).describe('a message kind: ' + MAIL_KINDS.join(', '));

const TemplateParams = z.object({ kind: MailKind, locale: MailLocale });
const TenantTemplateParams = TemplateParams.extend({ tenant_id: IdParam });

const SampleValue = z.union([z.string(), z.boolean()]);

export const MailTemplateKind = z
  .object({
    kind: MailKind,
    to: z.enum(['member', 'staff', 'tenant']).describe('who reads it'),
    category: z
      .enum(['transactional', 'marketing'])
      .describe('marketing mail goes only to members who consented, with a one-click unsubscribe'),
    description: z.string(),
    variables: z.array(
      z.object({
        name: z.string().describe('used as {{name}} (or {{#if name}} for a flag)'),
        description: z.string(),
        samples: z
          .object({ en: SampleValue, fr: SampleValue, ar: SampleValue })
          .describe('the value of the preview, per language'),
      }),
    ),
    templates: z
      .array(z.object({ locale: MailLocale, custom: z.boolean(), updated_at: Timestamp.nullable() }))
      .describe("per language, whether the tenant's own template is used (false: the default)"),
  })
  .meta({ id: 'MailTemplateKind' });

export const MailTemplateText = z.object({ subject: z.string(), body: z.string() });

export const MailTemplate = z
  .object({
    kind: MailKind,
    locale: MailLocale,
    subject: z.string(),
    body: z.string().describe('plain text, paragraphs separated by a blank line'),
    custom: z.boolean().describe("true: the tenant's own template; false: the default (shown here)"),
    updated_at: Timestamp.nullable(),
    updated_by: AuditActor.nullable(),
    default: MailTemplateText.describe("the platform's default of this kind and language"),
  })
  .meta({ id: 'MailTemplate' });

export const MailTemplateBody = z.object({
  subject: Text.max(1_000).describe('one line, at most 200 characters; {{variable}} and {{#if flag}}…{{/if}}'),
  body: Text.max(20_000).describe('at most 5,000 characters; the same Handlebars subset'),
});

export const MailPreview = z
  .object({
    subject: z.string(),
    text: z.string().describe('the text part'),
    html: z.string().describe("the HTML part in the tenant's branding (show it in a sandboxed frame)"),
  })
  .meta({ id: 'MailPreview' });

const templateErrors = ['invalid_template'] as const;

const staffMail = {
  service: 'identity',
  scope: null,
  memberToken: false,
  staffRole: 'manager',
  idempotent: false,
  tag: 'Staff: mail',
} as const;

/**
 * A tenant's templates through the staff API (managers; the console's Mail page) and the operator
 * API (`npm run admin -- tenant:mail:templates ...`): each saved template is validated first (422
 * `invalid_template`, `fields` naming the field, line and column of each error), audited, and used
 * at once by every replica; a reset goes back to the default.
 */
export const mailTemplateStaffOperations = defineOperations({
  'staff.mail.settings.get': {
    ...staffMail,
    method: 'GET',
    path: '/staff/v1/mail/settings',
    operation: 'staff.mail.settings.get',
    summary: "The tenant's mail branding: sender name, Reply-To, logo, colours, footer, default language",
    response: z.object({ mail: StaffMailSettings }),
    errors: [],
  },
  'staff.mail.settings.update': {
    ...staffMail,
    method: 'PUT',
    path: '/staff/v1/mail/settings',
    operation: 'staff.mail.settings.update',
    summary:
      "Set the tenant's mail branding (all of it: an omitted field takes its default); the From address and SMTP server stay the operator's (audited)",
    body: StaffMailSettingsBody,
    response: z.object({ mail: StaffMailSettings }),
    errors: [],
  },
  'staff.mail.templates.list': {
    ...staffMail,
    method: 'GET',
    path: '/staff/v1/mail/templates',
    operation: 'staff.mail.templates.list',
    summary: 'The message kinds with their variables (description and sample) and which languages have own templates',
    response: z.object({ kinds: z.array(MailTemplateKind) }),
    errors: [],
  },
  'staff.mail.templates.get': {
    ...staffMail,
    method: 'GET',
    path: '/staff/v1/mail/templates/:kind/:locale',
    operation: 'staff.mail.templates.get',
    summary: "A kind's template in a language: the tenant's own, else the default",
    params: TemplateParams,
    response: z.object({ template: MailTemplate }),
    errors: [],
  },
  'staff.mail.templates.update': {
    ...staffMail,
    method: 'PUT',
    path: '/staff/v1/mail/templates/:kind/:locale',
    operation: 'staff.mail.templates.update',
    summary: "Save the tenant's own template of a kind in a language (validated first; audited)",
    params: TemplateParams,
    body: MailTemplateBody,
    response: z.object({ template: MailTemplate }),
    errors: [...templateErrors],
  },
  'staff.mail.templates.reset': {
    ...staffMail,
    method: 'DELETE',
    path: '/staff/v1/mail/templates/:kind/:locale',
    operation: 'staff.mail.templates.reset',
    summary: 'Reset a kind in a language to the default template (audited when there was an own one)',
    params: TemplateParams,
    response: z.object({ template: MailTemplate }),
    errors: [],
  },
  'staff.mail.templates.preview': {
    ...staffMail,
    method: 'POST',
    path: '/staff/v1/mail/templates/:kind/:locale/preview',
    operation: 'staff.mail.templates.preview',
    summary: "Render a subject and body with the kind's sample values in the tenant's branding, without saving",
    params: TemplateParams,
    body: MailTemplateBody,
    response: z.object({ preview: MailPreview }),
    errors: [...templateErrors],
  },
});

export const mailTemplateOperations = defineOperations({
  'admin.tenant.mail.templates.list': {
    ...base,
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/mail/templates',
    operation: 'admin.tenant.mail.templates.list',
    summary: "The message kinds with their variables and which languages have the tenant's own templates",
    params: TenantParams,
    response: z.object({ kinds: z.array(MailTemplateKind) }),
    errors: ['invalid_operator_token', 'tenant_not_found'],
  },
  'admin.tenant.mail.templates.get': {
    ...base,
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/mail/templates/:kind/:locale',
    operation: 'admin.tenant.mail.templates.get',
    summary: "A kind's template in a language: the tenant's own, else the default",
    params: TenantTemplateParams,
    response: z.object({ template: MailTemplate }),
    errors: ['invalid_operator_token', 'tenant_not_found'],
  },
  'admin.tenant.mail.templates.update': {
    ...base,
    method: 'PUT',
    path: '/admin/v1/tenants/:tenant_id/mail/templates/:kind/:locale',
    operation: 'admin.tenant.mail.templates.update',
    summary: "Save a tenant's own template of a kind in a language (validated first; audited)",
    params: TenantTemplateParams,
    body: MailTemplateBody,
    response: z.object({ template: MailTemplate }),
    errors: ['invalid_operator_token', 'tenant_not_found', ...templateErrors],
  },
  'admin.tenant.mail.templates.reset': {
    ...base,
    method: 'DELETE',
    path: '/admin/v1/tenants/:tenant_id/mail/templates/:kind/:locale',
    operation: 'admin.tenant.mail.templates.reset',
    summary: 'Reset a kind in a language to the default template (audited when there was an own one)',
    params: TenantTemplateParams,
    response: z.object({ template: MailTemplate }),
    errors: ['invalid_operator_token', 'tenant_not_found'],
  },
  'admin.tenant.mail.templates.preview': {
    ...base,
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/mail/templates/:kind/:locale/preview',
    operation: 'admin.tenant.mail.templates.preview',
    summary: "Render a subject and body with the kind's sample values in the tenant's branding, without saving",
    params: TenantTemplateParams,
    body: MailTemplateBody,
    response: z.object({ preview: MailPreview }),
    errors: ['invalid_operator_token', 'tenant_not_found', ...templateErrors],
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

const frTemplate = {
  subject: 'Votre récompense {{reward}} vous attend',
  body: 'Bonjour {{name}},\n\nBonne nouvelle : « {{reward}} » est à vous.{{#if staff_note}}\n{{staff_note}}{{/if}}',
};
const template = {
  kind: 'claim_approved' as const,
  locale: 'fr' as const,
  ...frTemplate,
  custom: true,
  updated_at: '2026-11-26T09:30:00.000Z',
  updated_by: { type: 'staff' as const, id: 7, email: 'maria@cafe-atlas.example', role: 'manager' as const },
  default: {
    subject: 'Votre demande de récompense a été acceptée',
    body: 'Bonjour {{name}},\n\nVotre demande pour « {{reward}} » a été acceptée ; {{points}} points ont été déduits.{{#if staff_note}}\nNote de l’équipe : {{staff_note}}{{/if}}',
  },
};
const kinds = [
  {
    kind: 'claim_approved' as const,
    to: 'member' as const,
    category: 'transactional' as const,
    description: 'A reward claim approved',
    variables: [
      {
        name: 'name',
        description: "the member's name",
        samples: { en: 'Ana Silva', fr: 'Ana Silva', ar: 'Ana Silva' },
      },
      {
        name: 'points',
        description: 'the points deducted',
        samples: { en: '1,200', fr: '1\u202f200', ar: '1,200' },
      },
    ],
    templates: [
      { locale: 'en' as const, custom: false, updated_at: null },
      { locale: 'fr' as const, custom: true, updated_at: '2026-11-26T09:30:00.000Z' },
      { locale: 'ar' as const, custom: false, updated_at: null },
    ],
  },
];
const preview = {
  subject: 'Votre récompense Café offert vous attend',
  text: 'Bonjour Ana Silva,\n\nBonne nouvelle : « Café offert » est à vous.\n',
  html: '<!doctype html><html lang="fr" dir="ltr">…</html>',
};

const branding = {
  sender_name: mail.sender_name,
  reply_to: mail.reply_to,
  logo_url: mail.logo_url,
  primary_color: mail.primary_color,
  background_color: mail.background_color,
  postal_address: mail.postal_address,
  contact: mail.contact,
  default_locale: mail.default_locale,
};

export const mailExamples = {
  'staff.mail.settings.get': { response: { mail: branding } },
  'staff.mail.settings.update': { request: branding, response: { mail: branding } },
  'staff.mail.templates.list': { response: { kinds } },
  'staff.mail.templates.get': { response: { template } },
  'staff.mail.templates.update': { request: frTemplate, response: { template } },
  'staff.mail.templates.reset': {
    response: { template: { ...template, ...template.default, custom: false, updated_at: null, updated_by: null } },
  },
  'staff.mail.templates.preview': { request: frTemplate, response: { preview } },
  'admin.tenant.mail.templates.list': { response: { kinds } },
  'admin.tenant.mail.templates.get': { response: { template } },
  'admin.tenant.mail.templates.update': {
    request: frTemplate,
    response: { template: { ...template, updated_by: { type: 'operator' as const } } },
  },
  'admin.tenant.mail.templates.reset': {
    response: { template: { ...template, ...template.default, custom: false, updated_at: null, updated_by: null } },
  },
  'admin.tenant.mail.templates.preview': { request: frTemplate, response: { preview } },
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
