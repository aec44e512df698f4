import { AuditActor } from '@loyalty/contracts';
import { recordAudit, type Outbox, type Queryable } from '@loyalty/runtime';
import type { ClaimRequest } from './store/claim-requests.ts';

/**
 * The audit event of a claim decision, in the transaction that records it. The actor is the one
 * kept on the request when the decision started (`decided_by`); a request decided before that
 * column existed has none, and is recorded as decided by an app unknown.
 */
export function recordDecisionAudit(
  outbox: Outbox,
  db: Queryable,
  claim: ClaimRequest,
  action: 'claim.approved' | 'claim.rejected',
  requestId: string,
  at: Date,
): Promise<string> {
  const actor = AuditActor.safeParse(claim.decided_by);
  return recordAudit(
    outbox,
    db,
    claim.tenant_id,
    {
      actor: actor.success ? actor.data : { type: 'app', id: 'unknown' },
      action,
      target: {
        claim_request_id: claim.id,
        member_id: claim.member_id,
        card_id: claim.card_id,
        reward_id: claim.reward_id,
      },
      amounts: { points: action === 'claim.approved' ? -(claim.points_deducted ?? 0) : 0 },
      details: { reward_name: claim.reward_name, ...(claim.staff_note ? { note: claim.staff_note } : {}) },
      request_id: requestId,
    },
    at,
  );
}
