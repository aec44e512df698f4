import { AppError, type StaffMeta } from '@loyalty/contracts';
import type { Pool } from '@loyalty/runtime';
import { findMemberView, type MemberView } from '../store/members.ts';

/** Members as staff see them: found by email or phone (or id) within the staff user's tenant, unmasked. */
export function staffMembers(pool: Pool) {
  async function find(
    tenantId: number,
    column: 'id' | 'email' | 'phone',
    value: string | number | undefined,
  ): Promise<MemberView> {
    const member = value === undefined ? undefined : await findMemberView(pool, tenantId, { column, value });
    if (!member) throw new AppError('member_not_found');
    return member;
  }
  return {
    find: async (q: { email?: string; phone?: string }, meta: StaffMeta) => ({
      member: await (q.email !== undefined
        ? find(meta.tenant_id, 'email', q.email)
        : find(meta.tenant_id, 'phone', q.phone)),
    }),
    get: async (d: { member_id: number }, meta: StaffMeta) => ({
      member: await find(meta.tenant_id, 'id', d.member_id),
    }),
  };
}
