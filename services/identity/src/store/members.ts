import { AppError } from '@loyalty/contracts';
import { isUniqueViolation, type Queryable, returnedRow } from '@loyalty/runtime';

export interface Member {
  id: number;
  tenant_id: number;
  name: string;
  email: string | null;
  phone: string | null;
  accepts_emails: boolean;
  is_active: boolean;
}

const cols = 'id, tenant_id, name, email, phone, accepts_emails, is_active';

/**
 * A member that is not a tombstone (erased). Every lookup of a member goes through this condition,
 * so a tombstone is `member_not_found` everywhere: by id, email or phone, in other services'
 * look-ups, in the staff console and for its member tokens.
 */
export const liveMember = (alias?: string): string => `${alias ? `${alias}.` : ''}erased_at IS NULL`;
const LIVE_MEMBER = liveMember();

export async function findMemberBy(
  db: Queryable,
  tenantId: number,
  by: { id?: number; email?: string; phone?: string },
  lock = false,
): Promise<Member | undefined> {
  const [col, value] =
    by.id !== undefined ? ['id', by.id] : by.email !== undefined ? ['email', by.email] : ['phone', by.phone];
  const { rows } = await db.query<Member>(
    `SELECT ${cols} FROM identity.members WHERE tenant_id = $1 AND ${col} = $2 AND ${LIVE_MEMBER}${lock ? ' FOR UPDATE' : ''}`,
    [tenantId, value],
  );
  return rows[0];
}

/** Insert a member; a taken email or phone (unique within the tenant) is a 409 naming which. */
export async function insertMember(
  db: Queryable,
  m: {
    tenantId: number;
    name: string;
    email: string | null;
    phone: string | null;
    acceptsEmails: boolean;
    locale?: string | null | undefined;
  },
): Promise<Member> {
  try {
    const { rows } = await db.query<Member>(
      `INSERT INTO identity.members (tenant_id, name, email, phone, accepts_emails, locale) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${cols}`,
      [m.tenantId, m.name, m.email, m.phone, m.acceptsEmails, m.locale ?? null],
    );
    return returnedRow(rows, 'insert member');
  } catch (err) {
    if (isUniqueViolation(err, 'members_tenant_email'))
      throw new AppError('email_taken', undefined, { field: 'email' });
    if (isUniqueViolation(err, 'members_tenant_phone'))
      throw new AppError('phone_taken', undefined, { field: 'phone' });
    throw err;
  }
}

export async function membersByIds(db: Queryable, tenantId: number, ids: number[]): Promise<Member[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<Member>(
    `SELECT ${cols} FROM identity.members WHERE tenant_id = $1 AND id = ANY($2::bigint[]) AND ${LIVE_MEMBER}`,
    [tenantId, ids],
  );
  return rows;
}

/** Of `ids`, the tombstones of a merge and the member each was merged into. */
export async function mergedMembers(
  db: Queryable,
  tenantId: number,
  ids: number[],
): Promise<{ id: number; into: number }[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{ id: string; into: string }>(
    `SELECT id, merged_into AS into FROM identity.members
      WHERE tenant_id = $1 AND id = ANY($2::bigint[]) AND merged_into IS NOT NULL`,
    [tenantId, ids],
  );
  return rows.map((r) => ({ id: Number(r.id), into: Number(r.into) }));
}

/** A member as staff see it: unmasked, with its creation time. */
export interface MemberView {
  id: number;
  name: string;
  email: string | null;
  phone: string | null;
  is_active: boolean;
  created_at: string;
}

/** One member of the tenant by id, email or phone, for the staff console. */
export async function findMemberView(
  db: Queryable,
  tenantId: number,
  by: { column: 'id' | 'email' | 'phone'; value: string | number },
): Promise<MemberView | undefined> {
  const { rows } = await db.query<MemberView>(
    `SELECT id, name, email, phone, is_active, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at
       FROM identity.members WHERE tenant_id = $1 AND ${by.column} = $2 AND ${LIVE_MEMBER}`,
    [tenantId, by.value],
  );
  return rows[0];
}

/**
 * The languages members' mail is written in (null: the tenant's default), by member id. Apart from
 * `Member` so that no answer built from a member row changes.
 */
export async function memberLocales(
  db: Queryable,
  tenantId: number,
  ids: number[],
): Promise<Map<number, string | null>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; locale: string | null }>(
    `SELECT id, locale FROM identity.members WHERE tenant_id = $1 AND id = ANY($2::bigint[])`,
    [tenantId, ids],
  );
  return new Map(rows.map((r) => [Number(r.id), r.locale]));
}

/** Set a live member's language (null: the tenant's default); false when there is no such member. */
export async function setMemberLocale(
  db: Queryable,
  tenantId: number,
  memberId: number,
  locale: string | null,
): Promise<boolean> {
  const r = await db.query(
    `UPDATE identity.members SET locale = $3 WHERE tenant_id = $1 AND id = $2 AND ${LIVE_MEMBER}`,
    [tenantId, memberId, locale],
  );
  return (r.rowCount ?? 0) > 0;
}
