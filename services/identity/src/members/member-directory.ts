import { AppError, Email, Phone, type MemberSummary, type ServiceMeta } from '@loyalty/contracts';
import { isUniqueViolation, withTransaction, type Clock, type Outbox, type Pool } from '@loyalty/runtime';
import { maskEmail, maskPhone } from '../domain/masking.ts';
import { recordMemberRegistered } from '../events.ts';
import { findMemberBy, insertMember, membersByIds, mergedMembers, type Member } from '../store/members.ts';

export function summary(m: Member): MemberSummary {
  return {
    id: m.id,
    name: m.name,
    email: maskEmail(m.email),
    phone: maskPhone(m.phone),
    has_email: m.email !== null,
    is_active: m.is_active,
  };
}

function normalized(by: { member_id?: number; email?: string; phone?: string }) {
  if (by.member_id !== undefined) return { id: by.member_id };
  if (by.email !== undefined) {
    const e = Email.safeParse(by.email);
    if (!e.success)
      throw new AppError('validation_error', undefined, {
        fields: [{ field: 'email', message: 'must be a valid email address' }],
      });
    return { email: e.data };
  }
  const p = Phone.safeParse(by.phone);
  if (!p.success)
    throw new AppError('validation_error', undefined, {
      fields: [{ field: 'phone', message: 'must be a valid phone number' }],
    });
  return { phone: p.data };
}

/** Members as other services need them: found by id, email or phone within the tenant, or created. */
export function memberDirectory(pool: Pool, outbox: Outbox, clock: Clock) {
  return {
    async resolve(
      d: { member_id?: number; email?: string; phone?: string; create_if_missing: boolean; name?: string },
      meta: ServiceMeta,
    ): Promise<{ member: MemberSummary; created: boolean }> {
      const by = normalized(d);
      const found = await findMemberBy(pool, meta.tenant_id, by);
      if (found) return { member: summary(found), created: false };
      if (!d.create_if_missing || by.id !== undefined) throw new AppError('member_not_found');
      try {
        // The member and its `member_registered` event commit together.
        const created = await withTransaction(pool, async (db) => {
          const member = await insertMember(db, {
            tenantId: meta.tenant_id,
            name: d.name ?? 'Member',
            email: by.email ?? null,
            phone: by.phone ?? null,
            acceptsEmails: false,
          });
          await recordMemberRegistered(db, outbox, member, 'purchase', clock.now());
          return member;
        });
        return { member: summary(created), created: true };
      } catch (err) {
        // Two earns for one new member at once: the loser finds the winner's row.
        if (err instanceof AppError || isUniqueViolation(err)) {
          const again = await findMemberBy(pool, meta.tenant_id, by);
          if (again) return { member: summary(again), created: false };
        }
        throw err;
      }
    },

    async getMany(
      d: { ids: number[]; merged?: boolean | undefined },
      meta: ServiceMeta,
    ): Promise<{ members: MemberSummary[]; merged?: { id: number; into: number }[] }> {
      const members = (await membersByIds(pool, meta.tenant_id, d.ids)).map(summary);
      if (!d.merged) return { members };
      return { members, merged: await mergedMembers(pool, meta.tenant_id, d.ids) };
    },
  };
}
