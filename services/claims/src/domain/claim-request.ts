import type { ClaimStatus as PublicClaimStatus } from '@loyalty/contracts';

/**
 * A stored request's status: the public ones plus the transient `approving` (below), which never
 * leaves this service: clients see it as `pending` ({@link publicStatus}).
 */
export type ClaimStatus = PublicClaimStatus | 'approving' | 'holding';

export function publicStatus(status: ClaimStatus): PublicClaimStatus {
  return status === 'approving' || status === 'holding' ? 'pending' : status;
}

/**
 * The claim request state machine (pure). Only a pending request moves, and only once:
 *
 *   holding --hold placed--> pending        (holding --hold refused--> gone)
 *   pending --approve--> approving --debit applied--> approved
 *                        approving --debit refused--> pending
 *   pending --reject--> rejected
 *   pending --lifetime over--> expired
 *
 * `approving` exists because approval spans two services: it is written (and committed) before
 * the ledger debit, so that neither a reject nor the expiry sweeper can take a request whose
 * points may already be gone. A retry of the approval (or the sweeper) finishes it.
 */
export type Transition = 'approve' | 'reject';

export interface ClaimState {
  status: ClaimStatus;
  expires_at: Date;
}

export const HOUR_MS = 3_600_000;

export function expiryOf(createdAt: Date, lifetimeHours: number): Date {
  return new Date(createdAt.getTime() + lifetimeHours * HOUR_MS);
}

/** A pending request whose lifetime is over counts as expired even before the sweeper has run. */
export function isOverdue(claim: ClaimState, now: Date): boolean {
  return claim.status === 'pending' && claim.expires_at.getTime() <= now.getTime();
}

export type Decision = { ok: true; resume: boolean } | { ok: false; expire: boolean; currentStatus: ClaimStatus };

/**
 * May `transition` start on this request now? `resume` marks an approval that finds its own earlier
 * attempt half-done (status `approving`): it goes on with the same ledger idempotency key.
 * `expire` asks the caller to record the expiry it just noticed.
 */
export function decide(claim: ClaimState, transition: Transition, now: Date): Decision {
  if (isOverdue(claim, now)) return { ok: false, expire: true, currentStatus: 'expired' };
  if (claim.status === 'pending') return { ok: true, resume: false };
  if (claim.status === 'approving' && transition === 'approve') return { ok: true, resume: true };
  return { ok: false, expire: false, currentStatus: claim.status };
}

/**
 * Ledger failures after which the debit certainly did not happen, so the request can go back to
 * pending. Anything else (a timeout, no answer, an internal error, a concurrent attempt with the
 * same key) may hide an applied debit: the request stays `approving` until a retry settles it.
 */
const definiteRefusals = new Set([
  'insufficient_points',
  'wrong_card_type',
  'card_not_found',
  'member_not_found',
  'member_inactive',
  'validation_error',
]);

export function debitCertainlyNotApplied(code: string): boolean {
  return definiteRefusals.has(code);
}

/**
 * The idempotency key of the ledger hold and debit of one claim: the same on every attempt. The
 * hold placed at creation under it is what the approval's debit captures.
 */
export function debitKey(claimId: number): string {
  return `claim:${claimId}`;
}

export function pagination(limit: number, offset: number, total: number) {
  return { limit, offset, total, has_more: offset + limit < total };
}
