import { randomUUID } from 'node:crypto';
import type { ServiceMeta } from '@loyalty/contracts';
import type { Logger, Pool } from '@loyalty/runtime';
import type { ClaimsClients } from './clients.ts';
import { debitKey } from './domain/claim-request.ts';
import { failureFields } from './failure.ts';
import {
  deleteHolding,
  holdsToRelease,
  markHoldReleased,
  staleHolding,
  type ClaimRequest,
} from './store/claim-requests.ts';

/**
 * How long after its claim's expiry the ledger releases a hold by itself: a safety net for a
 * claim whose release never reached the ledger (the sweeper here normally releases it at once).
 */
export const HOLD_MARGIN_MS = 24 * 3_600_000;

/**
 * The ledger holds of claim requests, all under the claim's key `claim:<id>`: placed
 * when a request is created, captured by its approval (the debit under the same key), released
 * when it is rejected or expires. Each release is asked once the decision is committed; one that
 * fails (the ledger away) is asked again by the sweeper until it is done, so a hold never outlives
 * its claim for longer than a sweep.
 */
export function claimHolds(deps: { pool: Pool; clients: ClaimsClients; log: Logger }) {
  const { clients, log } = deps;
  const meta = (claim: ClaimRequest, requestId?: string): ServiceMeta => ({
    request_id: requestId ?? `claims-hold-${randomUUID()}`,
    tenant_id: claim.tenant_id,
  });

  async function release(claim: ClaimRequest, requestId?: string): Promise<boolean> {
    try {
      await clients.releaseHold(meta(claim, requestId), debitKey(claim.id), {
        card_id: claim.card_id,
        member_id: claim.member_id,
      });
      return true;
    } catch (err) {
      log.warn(
        { claim_request_id: claim.id, ...failureFields(err) },
        'claim hold not released; the sweeper will ask again',
      );
      return false;
    }
  }

  return {
    /** Reserve the claim's points; a reward that costs nothing needs no hold. */
    async place(claim: ClaimRequest, requestId: string): Promise<'held' | 'none'> {
      if (claim.points_cost === 0) return 'none';
      await clients.holdPoints(meta(claim, requestId), debitKey(claim.id), {
        card_id: claim.card_id,
        member_id: claim.member_id,
        points: claim.points_cost,
        expires_at: new Date(claim.expires_at.getTime() + HOLD_MARGIN_MS).toISOString(),
      });
      return 'held';
    },

    /** Release the hold of a request just rejected or expired (its decision is committed). */
    async releaseDecided(claim: ClaimRequest, requestId?: string): Promise<void> {
      if (claim.hold_status !== 'held') return;
      if (await release(claim, requestId)) await markHoldReleased(deps.pool, claim.id);
    },

    /** Sweeper: every decided request whose hold is still held; answers how many were released. */
    async releasePending(limit: number): Promise<number> {
      let released = 0;
      for (const claim of await holdsToRelease(deps.pool, limit)) {
        if (await release(claim)) {
          await markHoldReleased(deps.pool, claim.id);
          released++;
        }
      }
      return released;
    },

    /**
     * Sweeper: requests left `holding` by a creation that died before it finished (or is slower
     * than `before` allows): their hold, if the ledger placed one, is released and they are gone.
     */
    async abandonStale(before: Date, limit: number): Promise<number> {
      let abandoned = 0;
      for (const claim of await staleHolding(deps.pool, before, limit)) {
        if (claim.points_cost > 0 && !(await release(claim))) continue;
        await deleteHolding(deps.pool, claim.id);
        abandoned++;
      }
      return abandoned;
    },
  };
}
export type ClaimHolds = ReturnType<typeof claimHolds>;
