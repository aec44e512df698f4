import {
  AppError,
  AuditActor,
  type AdminMeta,
  type MailPreview,
  type MailTemplate,
  type StaffMeta,
} from '@loyalty/contracts';
import { auditActor, recordAudit, withTransaction, type Clock, type Outbox, type Pool } from '@loyalty/runtime';
import type { z } from 'zod';
import { tenantMail } from '../mail/messages.ts';
import {
  catalog,
  LOCALES,
  MAIL_KINDS,
  renderMail,
  sampleVars,
  validateTemplate,
  type Branding,
  type Locale,
  type MailKindName,
  type TemplateText,
} from '../mail/render/index.ts';
import {
  deleteTemplate,
  findTemplate,
  saveTemplate,
  tenantTemplates,
  type MailTemplateRow,
} from '../store/mail-templates.ts';

type Template = z.output<typeof MailTemplate>;
type Preview = z.output<typeof MailPreview>;
type Meta = StaffMeta | AdminMeta;
interface Which {
  kind: MailKindName;
  locale: Locale;
}

/** The link a marketing kind's preview shows where the member's own unsubscribe link goes. */
export const PREVIEW_UNSUBSCRIBE_URL = 'https://loyalty.example.com/api/v1/unsubscribe?token=preview';

function templateView(w: Which, row: MailTemplateRow | undefined): Template {
  const fallback = catalog[w.kind].defaults[w.locale];
  return {
    kind: w.kind,
    locale: w.locale,
    subject: row?.subject ?? fallback.subject,
    body: row?.body ?? fallback.body,
    custom: row !== undefined,
    updated_at: row ? row.updated_at.toISOString() : null,
    updated_by: row ? (AuditActor.safeParse(row.updated_by).data ?? null) : null,
    default: { subject: fallback.subject, body: fallback.body },
  };
}

const perLocale = <T>(f: (l: Locale) => T): Record<Locale, T> => ({ en: f('en'), fr: f('fr'), ar: f('ar') });

/** Every kind with its variables (a description and a sample per language) and the tenant's own templates. */
function kindsView(rows: MailTemplateRow[]) {
  const own = new Map(rows.map((r) => [`${r.kind}:${r.locale}`, r]));
  return MAIL_KINDS.map((kind) => {
    const spec = catalog[kind];
    const samples = perLocale((l) => sampleVars(kind, l));
    return {
      kind,
      to: spec.to,
      category: spec.category,
      description: spec.description,
      variables: Object.entries(spec.variables).map(([name, description]) => ({
        name,
        description,
        samples: perLocale((l) => samples[l][name] ?? ''),
      })),
      templates: LOCALES.map((locale) => {
        const row = own.get(`${kind}:${locale}`);
        return { locale, custom: row !== undefined, updated_at: row ? row.updated_at.toISOString() : null };
      }),
    };
  });
}

function previewOf(branding: Branding, w: Which, template: TemplateText) {
  const marketing = catalog[w.kind].category === 'marketing';
  return renderMail({
    kind: w.kind,
    locale: w.locale,
    vars: sampleVars(w.kind, w.locale),
    branding,
    template,
    unsubscribeUrl: marketing ? PREVIEW_UNSUBSCRIBE_URL : undefined,
  });
}

/** 422 invalid_template naming the field, line and column of each error, before anything is saved. */
function validated(kind: MailKindName, t: TemplateText): TemplateText {
  const errors = validateTemplate(kind, t);
  if (errors.length === 0) return t;
  throw new AppError(
    'invalid_template',
    `The template is not valid: ${errors.map((e) => `${e.field}: ${e.message}`).join('; ')}.`,
    { fields: errors },
  );
}

/**
 * A tenant's own templates per message kind and language (identity.mail_templates), for managers
 * in the staff API (the console's Mail page) and for the operator (API and CLI): listed with each
 * kind's variables and samples, read (the default when the tenant has none), saved after
 * validation (mail/render/template.ts), reset to the default, and previewed without saving. Saves
 * and resets are audited; renderers see them at their next message (mail/messages.ts).
 */
export function mailTemplates(deps: { pool: Pool; clock: Clock; outbox: Outbox }) {
  async function requireTenant(tenantId: number) {
    const t = await tenantMail(deps.pool, tenantId);
    if (!t) throw new AppError('tenant_not_found');
    return t;
  }
  return {
    async list(tenantId: number) {
      await requireTenant(tenantId);
      return { kinds: kindsView(await tenantTemplates(deps.pool, tenantId)) };
    },

    async get(tenantId: number, w: Which) {
      await requireTenant(tenantId);
      return { template: templateView(w, await findTemplate(deps.pool, tenantId, w.kind, w.locale)) };
    },

    async update(tenantId: number, w: Which & TemplateText, meta: Meta) {
      const t = validated(w.kind, { subject: w.subject, body: w.body });
      await requireTenant(tenantId);
      return withTransaction(deps.pool, async (db) => {
        const actor = auditActor(meta);
        const row = await saveTemplate(
          db,
          tenantId,
          { kind: w.kind, locale: w.locale, subject: t.subject, body: t.body, updated_by: actor },
          deps.clock.now(),
        );
        await recordAudit(deps.outbox, db, tenantId, {
          actor,
          action: 'mail.template_updated',
          target: { kind: w.kind, locale: w.locale },
          details: { subject: t.subject, body_characters: Array.from(t.body).length },
          request_id: meta.request_id,
        });
        return { template: templateView(w, row) };
      });
    },

    async reset(tenantId: number, w: Which, meta: Meta) {
      await requireTenant(tenantId);
      return withTransaction(deps.pool, async (db) => {
        if (await deleteTemplate(db, tenantId, w.kind, w.locale))
          await recordAudit(deps.outbox, db, tenantId, {
            actor: auditActor(meta),
            action: 'mail.template_reset',
            target: { kind: w.kind, locale: w.locale },
            details: {},
            request_id: meta.request_id,
          });
        return { template: templateView(w, undefined) };
      });
    },

    /** The subject and body rendered with the kind's samples in the tenant's branding; nothing is saved. */
    async preview(tenantId: number, w: Which & TemplateText): Promise<{ preview: Preview }> {
      const t = validated(w.kind, { subject: w.subject, body: w.body });
      return { preview: await previewOf((await requireTenant(tenantId)).branding, w, t) };
    },
  };
}
