import { returnedRow } from '@loyalty/runtime';
import type { AuditActor } from '@loyalty/contracts';
import type { Queryable } from '@loyalty/runtime';
import { GENESIS_HASH, type ChainedContent, type SignedAnchor } from '../domain/audit-chain.ts';

export interface AuditLogRow extends ChainedContent {
  recorded_at: string;
  hash: string;
  chain_version: number;
  key_id: string | null;
  details_digest: string | null;
  details_erased_at: string | null;
}

/** A row as the log lists it: its JSON columns hold the appended entry's parts (contracts' AuditEntry). */
export interface AuditListRow extends AuditLogRow {
  actor: AuditActor;
  target: Record<string, number | string>;
  amounts: Record<string, number>;
  details: Record<string, unknown>;
}

const iso = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
/**
 * A row with its details: a version-3 row's are kept beside the chain (audit_details; null once
 * erased, with the time they were), older rows' in the row itself.
 */
const cols = `l.tenant_id, l.seq, l.event_id, l.service, ${iso('l.occurred_at')} AS occurred_at, ${iso('l.recorded_at')} AS recorded_at,
  l.actor, l.action, l.target, l.amounts, CASE WHEN l.chain_version = 3 THEN d.details ELSE l.details END AS details,
  l.request_id, l.prev_hash, l.hash, l.chain_version, l.key_id, l.details_digest, ${iso('d.erased_at')} AS details_erased_at`;
const from = `identity.audit_log l LEFT JOIN identity.audit_details d ON d.tenant_id = l.tenant_id AND d.seq = l.seq`;

/** The tenant's chain head, locked for an append (created at the genesis hash on first use). */
export async function lockHead(db: Queryable, tenantId: number): Promise<{ seq: number; hash: string }> {
  await db.query(
    `INSERT INTO identity.audit_heads (tenant_id, seq, hash) VALUES ($1, 0, $2) ON CONFLICT (tenant_id) DO NOTHING`,
    [tenantId, GENESIS_HASH],
  );
  const { rows } = await db.query<{ seq: number; hash: string }>(
    `SELECT seq, hash FROM identity.audit_heads WHERE tenant_id = $1 FOR UPDATE`,
    [tenantId],
  );
  return returnedRow(rows, 'lock audit head');
}

export async function findHead(db: Queryable, tenantId: number): Promise<{ seq: number; hash: string }> {
  const { rows } = await db.query<{ seq: number; hash: string }>(
    `SELECT seq, hash FROM identity.audit_heads WHERE tenant_id = $1`,
    [tenantId],
  );
  return rows[0] ?? { seq: 0, hash: GENESIS_HASH };
}

export async function isRecorded(db: Queryable, eventId: string): Promise<boolean> {
  return (await db.query(`SELECT 1 FROM identity.audit_log WHERE event_id = $1`, [eventId])).rows.length > 0;
}

/** Append a version-3 row: its details go beside the chain (audit_details), the row keeps their digest. */
export async function appendRow(
  db: Queryable,
  row: ChainedContent & {
    actor_key: string;
    hash: string;
    chain_version: number;
    key_id: string;
    details_digest: string;
    recorded_at: Date;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO identity.audit_log (tenant_id, seq, event_id, service, occurred_at, recorded_at, actor, actor_key, action,
       target, amounts, details, request_id, prev_hash, hash, chain_version, key_id, details_digest)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, '{}', $12, $13, $14, $15, $16, $17)`,
    [
      row.tenant_id,
      row.seq,
      row.event_id,
      row.service,
      row.occurred_at,
      row.recorded_at,
      JSON.stringify(row.actor),
      row.actor_key,
      row.action,
      JSON.stringify(row.target),
      JSON.stringify(row.amounts),
      row.request_id,
      row.prev_hash,
      row.hash,
      row.chain_version,
      row.key_id,
      row.details_digest,
    ],
  );
  await db.query(`INSERT INTO identity.audit_details (tenant_id, seq, details) VALUES ($1, $2, $3)`, [
    row.tenant_id,
    row.seq,
    JSON.stringify(row.details),
  ]);
  await db.query(`UPDATE identity.audit_heads SET seq = $2, hash = $3 WHERE tenant_id = $1`, [
    row.tenant_id,
    row.seq,
    row.hash,
  ]);
}

/** Rows of the tenant after `afterSeq`, in sequence order (verification reads the chain page by page). */
export async function chainPage(
  db: Queryable,
  tenantId: number,
  afterSeq: number,
  limit: number,
): Promise<AuditLogRow[]> {
  const { rows } = await db.query<AuditLogRow>(
    `SELECT ${cols} FROM ${from} WHERE l.tenant_id = $1 AND l.seq > $2 ORDER BY l.seq LIMIT ${limit}`,
    [tenantId, afterSeq],
  );
  return rows;
}

export interface AuditFilter {
  tenantId: number;
  actor?: string;
  action?: string;
  from?: Date;
  to?: Date;
  limit: number;
  offset: number;
}

/** A page of the tenant's rows, newest first, with the count of all that match. */
export async function listRows(db: Queryable, f: AuditFilter): Promise<{ rows: AuditListRow[]; total: number }> {
  const where = ['l.tenant_id = $1'];
  const args: unknown[] = [f.tenantId];
  if (f.actor !== undefined) {
    args.push(f.actor.toLowerCase());
    where.push(`lower(l.actor_key) = $${args.length}`);
  }
  if (f.action !== undefined) {
    // `claim` matches every claim.* action; `claim.approved` exactly that one.
    args.push(f.action);
    where.push(
      f.action.includes('.') ? `l.action = $${args.length}` : `split_part(l.action, '.', 1) = $${args.length}`,
    );
  }
  if (f.from) {
    args.push(f.from);
    where.push(`l.occurred_at >= $${args.length}`);
  }
  if (f.to) {
    args.push(f.to);
    where.push(`l.occurred_at < $${args.length}`);
  }
  const w = where.join(' AND ');
  const [page, count] = await Promise.all([
    db.query<AuditListRow>(
      `SELECT ${cols} FROM ${from} WHERE ${w} ORDER BY l.seq DESC LIMIT ${f.limit} OFFSET ${f.offset}`,
      args,
    ),
    db.query<{ n: number }>(`SELECT count(*)::int AS n FROM identity.audit_log l WHERE ${w}`, args),
  ]);
  return { rows: page.rows, total: count.rows[0]?.n ?? 0 };
}

const anchorCols = `tenant_id, seq, hash, ${iso('anchored_at')} AS anchored_at, key_id, signature`;

/**
 * Chain heads that moved since their tenant's last anchor (or were never anchored), a page of
 * tenants at a time in tenant order.
 */
export async function unanchoredHeads(
  db: Queryable,
  afterTenant: number,
  limit: number,
): Promise<{ tenant_id: number; seq: number; hash: string }[]> {
  const { rows } = await db.query<{ tenant_id: number; seq: number; hash: string }>(
    `SELECT h.tenant_id, h.seq, h.hash FROM identity.audit_heads h
      WHERE h.tenant_id > $1 AND h.seq > 0
        AND NOT EXISTS (SELECT 1 FROM identity.audit_anchors a WHERE a.tenant_id = h.tenant_id AND a.seq >= h.seq)
      ORDER BY h.tenant_id LIMIT ${limit}`,
    [afterTenant],
  );
  return rows;
}

/** Store an anchor; false when another replica anchored the same head first. */
export async function insertAnchor(db: Queryable, a: SignedAnchor): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO identity.audit_anchors (tenant_id, seq, hash, anchored_at, key_id, signature)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, seq) DO NOTHING`,
    [a.tenant_id, a.seq, a.hash, a.anchored_at, a.key_id, a.signature],
  );
  return rowCount === 1;
}

/** Every anchor of the tenant, in sequence order. */
export async function tenantAnchors(db: Queryable, tenantId: number): Promise<SignedAnchor[]> {
  const { rows } = await db.query<SignedAnchor>(
    `SELECT ${anchorCols} FROM identity.audit_anchors WHERE tenant_id = $1 ORDER BY seq`,
    [tenantId],
  );
  return rows;
}

/** The tenant's rows naming the member as a target, in sequence order (a member's data export). */
export async function memberRows(db: Queryable, tenantId: number, memberId: number): Promise<AuditLogRow[]> {
  const { rows } = await db.query<AuditLogRow>(
    `SELECT ${cols} FROM ${from} WHERE l.tenant_id = $1 AND l.target->>'member_id' = $2::text ORDER BY l.seq`,
    [tenantId, memberId],
  );
  return rows;
}

/**
 * An erasure: the details of the tenant's version-3 rows that name the member as a target, or
 * carry their personal data (`pattern`), are blanked; the chain keeps their digest and verifies.
 */
export async function eraseMemberDetails(
  db: Queryable,
  tenantId: number,
  memberId: number,
  pattern: string | undefined,
  now: Date,
): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE identity.audit_details d SET details = NULL, erased_at = $4
       FROM identity.audit_log l
      WHERE d.tenant_id = $1 AND l.tenant_id = d.tenant_id AND l.seq = d.seq AND d.details IS NOT NULL
        AND (l.target->>'member_id' = $2::text OR ($3::text IS NOT NULL AND d.details::text ~* $3))`,
    [tenantId, memberId, pattern ?? null, now],
  );
  return rowCount ?? 0;
}
