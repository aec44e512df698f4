import type { Outbox, Queryable } from '@loyalty/runtime';
import { eventData } from './domain/record.ts';
import type { ClaimRequest } from './store/claim-requests.ts';

export type ClaimEvent = 'claim_requested' | 'claim_approved' | 'claim_rejected' | 'claim_expired';

/** Write a claim event into the outbox in the caller's transaction (`<root>.events.claims.<event>`). */
export function recordClaimEvent(
  db: Queryable,
  outbox: Outbox,
  type: ClaimEvent,
  claim: ClaimRequest,
  occurredAt: Date,
): Promise<string> {
  return outbox.record(db, { type, tenantId: claim.tenant_id, data: eventData(claim), occurredAt });
}
