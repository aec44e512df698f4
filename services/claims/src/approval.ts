import { randomUUID } from 'node:crypto';
import { AppError, type AuditActor, type ServiceMeta } from '@loyalty/contracts';
import { withTransaction, type Logger, type ReplayKey } from '@loyalty/runtime';
import { recordDecisionAudit } from './audit.ts';
import { notPending, type ClaimDeps } from './claim-requests.ts';
import { debitCertainlyNotApplied, debitKey, decide } from './domain/claim-request.ts';
import { recordClaimEvent } from './events.ts';
import { failureFields } from './failure.ts';
import {
  findClaimRequest,
  markApproved,
  markApproving,
  releaseApproval,
  type ClaimRequest,
} from './store/claim-requests.ts';

/** Test-only hooks, reachable only through startClaims' options (never from the environment). */
export interface ClaimFaults {
  /** Runs after the ledger debit succeeded and before the request is marked approved; a throw simulates a crash there. */
  afterLedgerDebit?: (claim: ClaimRequest) => void | Promise<void>;
}

export interface ApprovedReply {
  claim_request: { id: number; status: 'approved'; points_deducted: number; approved_at: string };
}

/**
 * Approval: a saga over two services, crash-safe in three steps.
 *
 * 1. In one transaction, under the row lock: the request must be pending (or `approving`, left by
 *    an earlier attempt); it becomes `approving`, owned by this attempt, and that is committed.
 *    From here on reject and the expiry sweeper refuse it, so no request whose points may be gone
 *    can end up rejected or expired.
 * 2. The ledger debits the reward's points under the key `claim:<id>`. Every attempt uses that key,
 *    so a retry replays the first debit instead of applying a second one.
 * 3. In one transaction: `approving` -> approved with points_deducted, approved_at, the outbox
 *    event and the Idempotency-Key response.
 *
 * A crash between 2 and 3 leaves `approving`: a retry (or the sweeper after a while) runs 1-3 again
 * and finishes it with the replayed debit. When the ledger certainly did not debit (insufficient
 * points and other refusals), the attempt hands the request back to pending and answers the error.
 */
export function approvals(deps: ClaimDeps, faults: ClaimFaults = {}) {
  /** `actor`: who approves (a staff user, an app); a resumed approval keeps the one who started it. */
  async function approve(
    d: { request_id: number; staff_note?: string },
    meta: ServiceMeta,
    actor?: AuditActor,
  ): Promise<ApprovedReply> {
    const key = { tenantId: meta.tenant_id, key: meta.idempotency_key, operation: 'claims.approve', data: d };
    const replay = key.key ? await deps.replays.find<ApprovedReply>({ ...key, key: key.key }) : undefined;
    if (replay) return replay;
    await deps.expireIfDue(meta.tenant_id, d.request_id);
    const attempt = randomUUID();
    const claim = await takeRequest(deps, meta, d, attempt, actor);
    const debit = await debitOnce(deps, meta, claim, attempt);
    await faults.afterLedgerDebit?.(claim);
    return recordApproval(deps, key, meta, claim, debit, d.staff_note);
  }

  return {
    approve,
    /** Finish an approval whose process died between the debit and the status change. */
    async resume(claim: { id: number; tenant_id: number }, log: Logger): Promise<boolean> {
      const requestId = `claims-resume-${randomUUID()}`;
      const meta: ServiceMeta = { request_id: requestId, tenant_id: claim.tenant_id };
      try {
        await approve({ request_id: claim.id }, meta);
        log.info({ claim_request_id: claim.id, request_id: requestId }, 'stalled approval finished');
        return true;
      } catch (err) {
        log.warn(
          { claim_request_id: claim.id, request_id: requestId, ...failureFields(err) },
          'stalled approval not finished',
        );
        return false;
      }
    },
  };
}

/** What the ledger debited for an approval (nothing for a reward that costs no points). */
interface Debit {
  points: number;
  transaction_id: number | null;
}

/** Step 1: take the request (pending, or `approving` left by an earlier attempt) for this attempt. */
function takeRequest(
  deps: ClaimDeps,
  meta: ServiceMeta,
  d: { request_id: number; staff_note?: string },
  attempt: string,
  actor: AuditActor | undefined,
): Promise<ClaimRequest> {
  return withTransaction(deps.pool, async (db) => {
    const found = await findClaimRequest(db, meta.tenant_id, d.request_id, true);
    if (!found) throw new AppError('claim_request_not_found');
    const now = deps.clock.now();
    const decision = decide(found, 'approve', now);
    if (!decision.ok) throw notPending(decision.currentStatus);
    return markApproving(db, found.id, attempt, now, d.staff_note, actor);
  });
}

/** Step 2: the debit, idempotent under the claim's key; a certain refusal hands the request back. */
async function debitOnce(deps: ClaimDeps, meta: ServiceMeta, claim: ClaimRequest, attempt: string): Promise<Debit> {
  if (claim.points_cost <= 0) return { points: 0, transaction_id: null };
  try {
    const r = await deps.clients.debitPoints(meta, debitKey(claim.id), {
      card_id: claim.card_id,
      member_id: claim.member_id,
      points: claim.points_cost,
      event: 'reward_claimed',
      reference: debitKey(claim.id),
      metadata: { claim_request_id: claim.id, reward_id: claim.reward_id, reward_name: claim.reward_name },
    });
    return { points: r.points, transaction_id: r.transaction_id };
  } catch (err) {
    if (err instanceof AppError && debitCertainlyNotApplied(err.code))
      await releaseApproval(deps.pool, claim.id, attempt);
    throw err;
  }
}

/** Step 3: record the approval with its event (and the Idempotency-Key response) in one transaction. */
function recordApproval(
  deps: ClaimDeps,
  key: Omit<ReplayKey, 'key'> & { key: string | undefined },
  meta: ServiceMeta,
  claim: ClaimRequest,
  debit: Debit,
  staffNote: string | undefined,
): Promise<ApprovedReply> {
  return deps.replays.run(key, async (db): Promise<ApprovedReply> => {
    const now = deps.clock.now();
    const done = await markApproved(db, claim.id, {
      pointsDeducted: debit.points,
      transactionId: debit.transaction_id,
      now,
      staffNote,
    });
    if (!done) {
      // A concurrent attempt on the same request finished first (with the same debit).
      const current = await findClaimRequest(db, meta.tenant_id, claim.id);
      throw notPending(current?.status ?? 'approved');
    }
    await recordClaimEvent(db, deps.outbox, 'claim_approved', done, now);
    await recordDecisionAudit(deps.outbox, db, done, 'claim.approved', meta.request_id, now);
    return {
      claim_request: {
        id: done.id,
        status: 'approved' as const,
        points_deducted: done.points_deducted,
        approved_at: done.approved_at.toISOString(),
      },
    };
  });
}
