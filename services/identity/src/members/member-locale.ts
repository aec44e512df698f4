import { AppError, type Meta } from '@loyalty/contracts';
import { auditActor, recordAudit, withTransaction, type Outbox, type Pool } from '@loyalty/runtime';
import { tenantMail } from '../mail/messages.ts';
import type { Locale } from '../mail/render/index.ts';
import { setMemberLocale } from '../store/members.ts';

/** A member's language (`PUT /api/v1/members/{id}/locale`), audited; null: the tenant's default. */
export function memberLocale(deps: { pool: Pool; outbox: Outbox }) {
  return {
    async update(d: { member_id: number; locale: Locale | null }, meta: Meta) {
      return withTransaction(deps.pool, async (db) => {
        if (!(await setMemberLocale(db, meta.tenant_id, d.member_id, d.locale))) throw new AppError('member_not_found');
        await recordAudit(deps.outbox, db, meta.tenant_id, {
          actor: auditActor(meta),
          action: 'member.locale_changed',
          target: { member_id: d.member_id },
          details: { locale: d.locale },
          request_id: meta.request_id,
        });
        const tenant = await tenantMail(db, meta.tenant_id);
        return { member_id: d.member_id, locale: d.locale, mail_locale: d.locale ?? tenant?.locale ?? 'en' };
      });
    },
  };
}
