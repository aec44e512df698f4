import { returnedRow } from '@loyalty/runtime';
import type { ClaimStatus as PublicClaimStatus } from '@loyalty/contracts';
import type { ClaimStatus } from '../domain/claim-request.ts';
import type { Queryable } from '@loyalty/runtime';

export interface ClaimRequest {
  id: number;
  tenant_id: number;
  card_id: number;
  member_id: number;
  reward_id: number;
  reward_name: string;
  points_cost: number;
  status: ClaimStatus;
  /** The ledger hold of the reward's points (claim:<id>): none, held, released, captured. */
  hold_status: HoldStatus;
  member_note: string | null;
  staff_note: string | null;
  points_deducted: number | null;
  ledger_transaction_id: number | null;
  created_at: Date;
  expires_at: Date;
  approval_started_at: Date | null;
  approval_attempt: string | null;
  approved_at: Date | null;
  rejected_at: Date | null;
  expired_at: Date | null;
  /** The audit actor of the decision (approve or reject), set when it starts. */
  decided_by: Record<string, unknown> | null;
}

/** A request the approval's last step recorded: its debit and time are set. */
export interface ApprovedClaimRequest extends ClaimRequest {
  points_deducted: number;
  approved_at: Date;
}

/** A request just rejected: its time is set. */
export interface RejectedClaimRequest extends ClaimRequest {
  rejected_at: Date;
}

const T = 'claims.claim_requests';

export type HoldStatus = 'none' | 'held' | 'released' | 'captured';

export async function insertClaimRequest(
  db: Queryable,
  c: {
    tenantId: number;
    cardId: number;
    memberId: number;
    rewardId: number;
    rewardName: string;
    pointsCost: number;
    memberNote: string | null;
    createdAt: Date;
    expiresAt: Date;
  },
): Promise<ClaimRequest> {
  // `holding` until its hold is placed (claim-requests.ts create): invisible to every reader.
  const { rows } = await db.query<ClaimRequest>(
    `INSERT INTO ${T} (tenant_id, card_id, member_id, reward_id, reward_name, points_cost, member_note, created_at, expires_at, status)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'holding') RETURNING *`,
    [c.tenantId, c.cardId, c.memberId, c.rewardId, c.rewardName, c.pointsCost, c.memberNote, c.createdAt, c.expiresAt],
  );
  return returnedRow(rows, 'insert claim request');
}

/** holding -> pending once its hold is placed (`held`, or `none` for a reward that costs nothing). */
export async function markPending(db: Queryable, id: number, hold: 'held' | 'none'): Promise<ClaimRequest | undefined> {
  const { rows } = await db.query<ClaimRequest>(
    `UPDATE ${T} SET status = 'pending', hold_status = $2 WHERE id = $1 AND status = 'holding' RETURNING *`,
    [id, hold],
  );
  return rows[0];
}

/** Forget a request that never became pending (its hold was refused, or never answered and is released). */
export async function deleteHolding(db: Queryable, id: number): Promise<void> {
  await db.query(`DELETE FROM ${T} WHERE id = $1 AND status = 'holding'`, [id]);
}

/** One request of the tenant; a foreign id is simply not found, nor is one still `holding`. `lock` takes the row lock. */
export async function findClaimRequest(
  db: Queryable,
  tenantId: number,
  id: number,
  lock = false,
): Promise<ClaimRequest | undefined> {
  const { rows } = await db.query<ClaimRequest>(
    `SELECT * FROM ${T} WHERE tenant_id = $1 AND id = $2 AND status <> 'holding'${lock ? ' FOR UPDATE' : ''}`,
    [tenantId, id],
  );
  return rows[0];
}

export async function listClaimRequests(
  db: Queryable,
  q: { tenantId: number; cardId: number; status?: PublicClaimStatus; limit: number; offset: number },
): Promise<{ rows: ClaimRequest[]; total: number }> {
  // A request being approved is still pending to clients (domain/claim-request.ts).
  const statuses = q.status === 'pending' ? ['pending', 'approving'] : q.status ? [q.status] : [];
  const where = `tenant_id = $1 AND card_id = $2 AND ${q.status ? 'status = ANY($3::text[])' : "status <> 'holding'"}`;
  const args: unknown[] = [q.tenantId, q.cardId, ...(q.status ? [statuses] : [])];
  const [page, count] = await Promise.all([
    db.query<ClaimRequest>(
      `SELECT * FROM ${T} WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${q.limit} OFFSET ${q.offset}`,
      args,
    ),
    db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${T} WHERE ${where}`, args),
  ]);
  return { rows: page.rows, total: count.rows[0]?.n ?? 0 };
}

/**
 * The staff queue of a tenant: pending (and approving) first, then newest first; optional card,
 * status and creation-time filters.
 */
export async function listQueue(
  db: Queryable,
  q: {
    tenantId: number;
    cardId?: number;
    status?: PublicClaimStatus;
    from?: Date;
    to?: Date;
    limit: number;
    offset: number;
  },
): Promise<{ rows: ClaimRequest[]; total: number }> {
  const where = ['tenant_id = $1'];
  const args: unknown[] = [q.tenantId];
  const add = (sql: string, value: unknown) => {
    args.push(value);
    where.push(sql.replace('?', `$${args.length}`));
  };
  if (q.cardId !== undefined) add('card_id = ?', q.cardId);
  if (q.status !== undefined)
    add('status = ANY(?::text[])', q.status === 'pending' ? ['pending', 'approving'] : [q.status]);
  if (q.from) add('created_at >= ?', q.from);
  if (q.to) add('created_at < ?', q.to);
  const w = where.join(' AND ');
  const [page, count] = await Promise.all([
    db.query<ClaimRequest>(
      `SELECT * FROM ${T} WHERE ${w}
        ORDER BY (status IN ('pending', 'approving')) DESC, created_at DESC, id DESC LIMIT ${q.limit} OFFSET ${q.offset}`,
      args,
    ),
    db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${T} WHERE ${w}`, args),
  ]);
  return { rows: page.rows, total: count.rows[0]?.n ?? 0 };
}

/** pending/approving -> approving, owned by `attempt` from now on (an attempt resuming another keeps its actor). */
export async function markApproving(
  db: Queryable,
  id: number,
  attempt: string,
  now: Date,
  staffNote: string | undefined,
  decidedBy: Record<string, unknown> | undefined,
): Promise<ClaimRequest> {
  const { rows } = await db.query<ClaimRequest>(
    `UPDATE ${T} SET status = 'approving', approval_attempt = $2, approval_started_at = $3, staff_note = COALESCE($4, staff_note),
            decided_by = COALESCE($5, decided_by)
      WHERE id = $1 RETURNING *`,
    [id, attempt, now, staffNote ?? null, decidedBy ? JSON.stringify(decidedBy) : null],
  );
  return returnedRow(rows, 'mark claim request approving');
}

/** approving -> approved, whichever attempt applied the debit (they all used the same ledger key). */
export async function markApproved(
  db: Queryable,
  id: number,
  r: { pointsDeducted: number; transactionId: number | null; now: Date; staffNote: string | undefined },
): Promise<ApprovedClaimRequest | undefined> {
  const { rows } = await db.query<ApprovedClaimRequest>(
    `UPDATE ${T} SET status = 'approved', points_deducted = $2, ledger_transaction_id = $3, approved_at = $4, staff_note = COALESCE($5, staff_note),
            hold_status = CASE hold_status WHEN 'held' THEN 'captured' ELSE hold_status END
      WHERE id = $1 AND status = 'approving' RETURNING *`,
    [id, r.pointsDeducted, r.transactionId, r.now, r.staffNote ?? null],
  );
  return rows[0];
}

/** approving -> pending after the ledger refused the debit, only if no later attempt took over. */
export async function releaseApproval(db: Queryable, id: number, attempt: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE ${T} SET status = 'pending', approval_attempt = NULL, approval_started_at = NULL WHERE id = $1 AND status = 'approving' AND approval_attempt = $2`,
    [id, attempt],
  );
  return (rowCount ?? 0) > 0;
}

export async function markRejected(
  db: Queryable,
  id: number,
  now: Date,
  staffNote: string | undefined,
  decidedBy: Record<string, unknown>,
): Promise<RejectedClaimRequest> {
  const { rows } = await db.query<RejectedClaimRequest>(
    `UPDATE ${T} SET status = 'rejected', rejected_at = $2, staff_note = COALESCE($3, staff_note), decided_by = $4 WHERE id = $1 RETURNING *`,
    [id, now, staffNote ?? null, JSON.stringify(decidedBy)],
  );
  return returnedRow(rows, 'mark claim request rejected');
}

/**
 * Move pending requests whose lifetime is over to expired and return them. One statement under
 * row locks with SKIP LOCKED: replicas sweeping at once take disjoint rows, and a request being
 * approved or rejected right now (row locked, or no longer pending) is left alone.
 */
export async function expireDue(
  db: Queryable,
  now: Date,
  limit: number,
  only?: { tenantId: number; id: number },
): Promise<ClaimRequest[]> {
  const { rows } = await db.query<ClaimRequest>(
    `WITH due AS (
       SELECT id FROM ${T} WHERE status = 'pending' AND expires_at <= $1${only ? ' AND tenant_id = $3 AND id = $4' : ''}
        ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
     UPDATE ${T} c SET status = 'expired', expired_at = $1 FROM due WHERE c.id = due.id RETURNING c.*`,
    [now, limit, ...(only ? [only.tenantId, only.id] : [])],
  );
  return rows;
}

/** Approvals started before `before` and never finished (their process died mid-way). */
export async function stalledApprovals(
  db: Queryable,
  before: Date,
  limit: number,
): Promise<{ id: number; tenant_id: number }[]> {
  const { rows } = await db.query<{ id: number; tenant_id: number }>(
    `SELECT id, tenant_id FROM ${T} WHERE status = 'approving' AND approval_started_at <= $1 ORDER BY approval_started_at LIMIT $2`,
    [before, limit],
  );
  return rows;
}

/** Decided (rejected or expired) requests whose hold the ledger has not yet given back. */
export async function holdsToRelease(db: Queryable, limit: number): Promise<ClaimRequest[]> {
  const { rows } = await db.query<ClaimRequest>(
    `SELECT * FROM ${T} WHERE hold_status = 'held' AND status IN ('rejected', 'expired') ORDER BY id LIMIT $1`,
    [limit],
  );
  return rows;
}

export async function markHoldReleased(db: Queryable, id: number): Promise<void> {
  await db.query(`UPDATE ${T} SET hold_status = 'released' WHERE id = $1 AND hold_status = 'held'`, [id]);
}

/** Requests left `holding` since before `before`: their creation died between the insert and the hold's answer. */
export async function staleHolding(db: Queryable, before: Date, limit: number): Promise<ClaimRequest[]> {
  const { rows } = await db.query<ClaimRequest>(
    `SELECT * FROM ${T} WHERE status = 'holding' AND created_at <= $1 ORDER BY created_at LIMIT $2`,
    [before, limit],
  );
  return rows;
}
