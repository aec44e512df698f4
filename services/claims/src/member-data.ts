import type { z } from 'zod';
import type { EraseMemberDataRequest, ExportMemberDataRequest, ServiceMeta } from '@loyalty/contracts';
import {
  erasePersonalTextInSharedTables,
  exportPage,
  personalPattern,
  type ExportSection,
  rewritePersonalText,
  withTransaction,
  type Pool,
} from '@loyalty/runtime';

/**
 * The claims service's part of a member's erasure: the notes of the member's claim requests
 * (theirs and staff's) go, the requests stay with their ids, reward, points and times; a note on
 * another member's request that names them is rewritten, as are event payloads and stored
 * responses carrying their name, email or phone. Idempotent.
 */
/** The member's claim requests, for their export (who on the staff decided is not theirs to read). */
const sections: ExportSection[] = [
  {
    name: 'claim_requests',
    query: `SELECT id AS key, to_jsonb(c) - 'decided_by' - 'approval_attempt' AS row FROM claims.claim_requests c
             WHERE tenant_id = $1 AND member_id = $2 AND id > $3 ORDER BY id LIMIT $4`,
  },
];

export function claimsMemberData(pool: Pool) {
  return {
    /** One page of the member's export. */
    export: (d: z.output<typeof ExportMemberDataRequest>, meta: ServiceMeta) =>
      exportPage(pool, sections, { tenantId: meta.tenant_id, memberId: d.member_id, cursor: d.cursor }),

    async erase(d: z.output<typeof EraseMemberDataRequest>, meta: ServiceMeta) {
      const pattern = personalPattern(d.personal);
      const changed = await withTransaction(pool, async (db) => {
        const notes = await db.query(
          `UPDATE claims.claim_requests SET member_note = NULL, staff_note = NULL
            WHERE tenant_id = $1 AND member_id = $2 AND (member_note IS NOT NULL OR staff_note IS NOT NULL)`,
          [meta.tenant_id, d.member_id],
        );
        const others = { where: 'tenant_id = $2', args: [meta.tenant_id] };
        return {
          claim_notes: notes.rowCount ?? 0,
          other_member_notes:
            (await rewritePersonalText(
              db,
              { table: 'claims.claim_requests', column: 'member_note', ...others },
              pattern,
            )) +
            (await rewritePersonalText(
              db,
              { table: 'claims.claim_requests', column: 'staff_note', ...others },
              pattern,
            )),
          ...(await erasePersonalTextInSharedTables(db, 'claims', pattern)),
        };
      });
      return { changed };
    },
  };
}
export type ClaimsMemberData = ReturnType<typeof claimsMemberData>;
