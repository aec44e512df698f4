import type { z } from 'zod';
import type { EraseMemberDataRequest, ServiceMeta } from '@loyalty/contracts';
import {
  erasePersonalTextInSharedTables,
  personalPattern,
  rewritePersonalText,
  withTransaction,
  type Pool,
} from '@loyalty/runtime';
import type { MemberDirectory } from './clients.ts';

/**
 * The ledger's part of a member's erasure. The books stay as they are: accounts, journal rows,
 * lots and holds keep their ids, amounts and times (the liability and its history add up after
 * it). Free text goes: the metadata apps attached to the member's journal rows, and any reference,
 * stored answer, event payload or stored response carrying the member's name, email or phone.
 * Idempotent: a repeated request finds nothing left to change.
 */
export function ledgerMemberData(pool: Pool, members: MemberDirectory) {
  return {
    async erase(d: z.output<typeof EraseMemberDataRequest>, meta: ServiceMeta) {
      const pattern = personalPattern(d.personal);
      const tenantMember = [meta.tenant_id, d.member_id];
      const changed = await withTransaction(pool, async (db) => {
        const metadata = await db.query(
          `UPDATE ledger.journal SET metadata = NULL WHERE tenant_id = $1 AND member_id = $2 AND metadata IS NOT NULL`,
          tenantMember,
        );
        // A reference stays unique per card: one that carried personal data becomes a random one.
        const references = pattern
          ? await db.query(
              `UPDATE ledger.journal SET reference = 'erased-' || gen_random_uuid()
                WHERE tenant_id = $2 AND member_id = $3 AND reference ~* $1`,
              [pattern, ...tenantMember],
            )
          : { rowCount: 0 };
        const answers = await rewritePersonalText(
          db,
          {
            table: 'ledger.member_events',
            column: 'answer',
            json: true,
            where: 'tenant_id = $2 AND member_id = $3',
            args: tenantMember,
          },
          pattern,
        );
        return {
          journal_metadata: metadata.rowCount ?? 0,
          journal_reference: references.rowCount ?? 0,
          member_events: answers,
          ...(await erasePersonalTextInSharedTables(db, 'ledger', pattern)),
        };
      });
      members.forget(meta.tenant_id, d.member_id);
      return { changed };
    },
  };
}
export type LedgerMemberData = ReturnType<typeof ledgerMemberData>;
