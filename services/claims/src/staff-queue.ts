import { AppError, queryDateRange, type ClaimStatus, type MemberSummary, type StaffMeta } from '@loyalty/contracts';
import { auditActor } from '@loyalty/runtime';
import type { approvals } from './approval.ts';
import type { ClaimDeps, claimRequests } from './claim-requests.ts';
import { pagination } from './domain/claim-request.ts';
import { claimRecord } from './domain/record.ts';
import { findClaimRequest, listQueue, type ClaimRequest } from './store/claim-requests.ts';

/**
 * The claims queue of the staff console: every card of the tenant, pending first, each claim with
 * its member and the member's spendable points on the claim's card (asked of the ledger in one
 * message per page). Decisions go through the same approval and rejection as the merchant API,
 * with the staff user as the audit actor.
 */
export function staffQueue(
  deps: ClaimDeps,
  claims: ReturnType<typeof claimRequests>,
  approval: ReturnType<typeof approvals>,
) {
  /** What the queue shows of these rows: members and balances asked for all of them at once. */
  async function recordMaker(meta: StaffMeta, rows: ClaimRequest[]) {
    const members: Map<number, MemberSummary> = await deps.clients.members(
      meta,
      rows.map((r) => r.member_id),
    );
    // A slow or missing ledger leaves the balances out rather than the queue.
    const balances = await deps.clients
      .pointsBalances(
        meta,
        rows.map((r) => ({ card_id: r.card_id, member_id: r.member_id })),
      )
      .catch(() => []);
    const balanceOf = new Map(balances.map((b) => [`${b.card_id}:${b.member_id}`, b.points_balance]));
    return (r: ClaimRequest) => ({
      ...claimRecord(r, members.get(r.member_id)),
      member_points_balance: balanceOf.get(`${r.card_id}:${r.member_id}`) ?? null,
    });
  }

  async function current(meta: StaffMeta, id: number) {
    const claim = await findClaimRequest(deps.pool, meta.tenant_id, id);
    if (!claim) throw new AppError('claim_request_not_found');
    const record = await recordMaker(meta, [claim]);
    return { claim_request: record(claim) };
  }

  return {
    async list(
      q: { card_id?: number; status?: ClaimStatus; from?: string; to?: string; limit: number; offset: number },
      meta: StaffMeta,
    ) {
      const { rows, total } = await listQueue(deps.pool, {
        tenantId: meta.tenant_id,
        cardId: q.card_id,
        status: q.status,
        ...queryDateRange(q),
        limit: q.limit,
        offset: q.offset,
      });
      const record = await recordMaker(meta, rows);
      return { claim_requests: rows.map(record), pagination: pagination(q.limit, q.offset, total) };
    },

    async approve(d: { request_id: number; note?: string }, meta: StaffMeta) {
      await approval.approve({ request_id: d.request_id, staff_note: d.note }, meta, auditActor(meta));
      return current(meta, d.request_id);
    },

    async reject(d: { request_id: number; note?: string }, meta: StaffMeta) {
      await claims.reject({ request_id: d.request_id, staff_note: d.note }, meta, auditActor(meta));
      return current(meta, d.request_id);
    },
  };
}
