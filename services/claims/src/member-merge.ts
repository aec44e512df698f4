import type { z } from 'zod';
import type { MergeMemberDataRequest, ServiceMeta } from '@loyalty/contracts';
import type { Pool } from '@loyalty/runtime';

/**
 * The claims part of a member merge: the source's open claim requests (pending, or being
 * approved) become the target's, so staff decide them for the member who now holds the points
 * (the ledger moved their holds with the lots). Decided requests stay the source's history.
 * Idempotent by state: a repeated request finds none left to move.
 */
export async function mergeClaims(pool: Pool, d: z.output<typeof MergeMemberDataRequest>, meta: ServiceMeta) {
  const { rowCount } = await pool.query(
    `UPDATE claims.claim_requests SET member_id = $3
      WHERE tenant_id = $1 AND member_id = $2 AND status IN ('pending', 'approving')`,
    [meta.tenant_id, d.source_member_id, d.target_member_id],
  );
  return { moved: { claim_requests: rowCount ?? 0 } };
}
