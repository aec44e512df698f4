import type { Clock, Logger, Outbox, Pool } from '@loyalty/runtime';
import type { ClaimHolds } from './claim-holds.ts';
import type { ClaimsConfig } from './config.ts';
import { ClaimSweeper } from './sweeper.ts';

/**
 * What the claims service does on its own, in every replica: the claim sweeper expires pending
 * requests past their lifetime, finishes stalled approvals, gives back holds of decided requests
 * and removes abandoned creations.
 */
export function claimsTasks(
  deps: { pool: Pool; outbox: Outbox; clock: Clock; log: Logger; holds: ClaimHolds },
  config: Pick<ClaimsConfig, 'CLAIM_SWEEP_INTERVAL_MS' | 'CLAIM_APPROVAL_RESUME_AFTER_MS'>,
  resume: (claim: { id: number; tenant_id: number }) => Promise<boolean>,
): { claimSweeper: ClaimSweeper } {
  return {
    claimSweeper: new ClaimSweeper({
      ...deps,
      intervalMs: config.CLAIM_SWEEP_INTERVAL_MS,
      resumeAfterMs: config.CLAIM_APPROVAL_RESUME_AFTER_MS,
      resume,
    }),
  };
}
