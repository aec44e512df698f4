import { AppError, type StaffMeta } from '@loyalty/contracts';
import type { Pool } from '@loyalty/runtime';

interface MemberView {
  id: number;
  name: string;
  email: string | null;
  phone: string | null;
  is_active: boolean;
  created_at: string;
}

/** Members as staff see them: found by email or phone (or id) within the staff user's tenant, unmasked. */
export function staffMembers(pool: Pool) {
  async function find(tenantId: number, col: 'id' | 'email' | 'phone', value: string | number): Promise<MemberView> {
    const { rows } = await pool.query<MemberView>(
      `SELECT id, name, email, phone, is_active, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at
         FROM identity.members WHERE tenant_id = $1 AND ${col} = $2`,
      [tenantId, value],
    );
    if (!rows[0]) throw new AppError('member_not_found');
    return rows[0];
  }
  return {
    find: async (q: { email?: string; phone?: string }, meta: StaffMeta) => ({
      member: await (q.email !== undefined
        ? find(meta.tenant_id, 'email', q.email)
        : find(meta.tenant_id, 'phone', q.phone!)),
    }),
    get: async (d: { member_id: number }, meta: StaffMeta) => ({
      member: await find(meta.tenant_id, 'id', d.member_id),
    }),
  };
}
