import { returnedRow } from '@loyalty/runtime';
import type { Queryable } from '@loyalty/runtime';

export interface Tenant {
  id: number;
  name: string;
  sandbox: boolean;
  contact_email: string | null;
  created_at: string;
  /** `inactive`: deactivated by the operator (offboarding). */
  status: 'active' | 'inactive';
}

const cols = `id, name, sandbox, contact_email, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
  CASE WHEN deactivated_at IS NULL THEN 'active' ELSE 'inactive' END AS status`;

export async function createTenant(
  db: Queryable,
  t: { name: string; sandbox: boolean; contactEmail: string | null },
): Promise<Tenant> {
  const { rows } = await db.query<Tenant>(
    `INSERT INTO identity.tenants (name, sandbox, contact_email) VALUES ($1, $2, $3) RETURNING ${cols}`,
    [t.name, t.sandbox, t.contactEmail],
  );
  return returnedRow(rows, 'insert tenant');
}

export async function listTenants(db: Queryable): Promise<Tenant[]> {
  return (await db.query<Tenant>(`SELECT ${cols} FROM identity.tenants ORDER BY id`)).rows;
}

export async function findTenant(db: Queryable, id: number): Promise<Tenant | undefined> {
  return (await db.query<Tenant>(`SELECT ${cols} FROM identity.tenants WHERE id = $1`, [id])).rows[0];
}

export async function updateContactEmail(
  db: Queryable,
  id: number,
  contactEmail: string | null,
): Promise<Tenant | undefined> {
  const { rows } = await db.query<Tenant>(
    `UPDATE identity.tenants SET contact_email = $2 WHERE id = $1 RETURNING ${cols}`,
    [id, contactEmail],
  );
  return rows[0];
}
