import type { Queryable } from '@loyalty/runtime';
import { findTenant } from '../store/tenants.ts';
import {
  defaultBranding,
  Formatter,
  renderMail,
  type Branding,
  type Locale,
  type MailKindName,
  type RenderedMail,
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
}

export async function tenantMail(db: Queryable, tenantId: number): Promise<TenantMail | undefined> {
  const tenant = await findTenant(db, tenantId);
  if (!tenant) return undefined;
  return { tenantId, sandbox: tenant.sandbox, branding: defaultBranding(tenant.name), locale: 'en' };
}

/** A message of `kind` for a tenant, in `locale` (the member's, else the tenant's default). */
export function renderFor(
  t: TenantMail,
  kind: MailKindName,
  vars: (f: Formatter, locale: Locale) => Vars,
  o: { locale?: Locale | null | undefined; timeZone?: string | undefined; unsubscribeUrl?: string | undefined } = {},
): Promise<RenderedMail> {
  const locale = o.locale ?? t.locale;
  return renderMail({
    kind,
    locale,
    vars: vars(new Formatter(locale, o.timeZone), locale),
    branding: t.branding,
    unsubscribeUrl: o.unsubscribeUrl,
  });
}
