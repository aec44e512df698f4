import type { Queryable } from '@loyalty/runtime';

export interface Tenant {
  id: number;
  name: string;
  sandbox: boolean;
  created_at: string;
}

const cols = `id, name, sandbox, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at`;

export async function createTenant(db: Queryable, name: string, sandbox: boolean): Promise<Tenant> {
  const { rows } = await db.query<Tenant>(
    `INSERT INTO identity.tenants (name, sandbox) VALUES ($1, $2) RETURNING ${cols}`,
    [name, sandbox],
  );
  return rows[0]!;
}

export async function listTenants(db: Queryable): Promise<Tenant[]> {
  return (await db.query<Tenant>(`SELECT ${cols} FROM identity.tenants ORDER BY id`)).rows;
}

export async function findTenant(db: Queryable, id: number): Promise<Tenant | undefined> {
  return (await db.query<Tenant>(`SELECT ${cols} FROM identity.tenants WHERE id = $1`, [id])).rows[0];
}
