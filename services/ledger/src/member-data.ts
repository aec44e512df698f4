import type { z } from 'zod';
import type { EraseMemberDataRequest, ExportMemberDataRequest, ServiceMeta } from '@loyalty/contracts';
import {
  ERASED,
  erasePersonalTextInSharedTables,
  exportPage,
  type ExportSection,
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
/** What the ledger holds about a member, for their export: their accounts, tiers and the books' rows. */
const sections: ExportSection[] = [
  {
    name: 'accounts',
    query: `SELECT card_id AS key, to_jsonb(a) AS row FROM ledger.accounts a
             WHERE tenant_id = $1 AND member_id = $2 AND card_id > $3 ORDER BY card_id LIMIT $4`,
  },
  {
    // The member's tier on each card with tiers, with the reason staff gave for one set by hand.
    name: 'tiers',
    query: `SELECT card_id AS key, to_jsonb(t) AS row FROM ledger.member_tiers t
             WHERE tenant_id = $1 AND member_id = $2 AND card_id > $3 ORDER BY card_id LIMIT $4`,
  },
  ...['journal', 'lots', 'holds', 'history_entries'].map((table) => ({
    name: table,
    query: `SELECT id AS key, to_jsonb(t) AS row FROM ledger.${table} t
             WHERE tenant_id = $1 AND member_id = $2 AND id > $3 ORDER BY id LIMIT $4`,
  })),
];

export function ledgerMemberData(pool: Pool, members: MemberDirectory) {
  return {
    /** One page of the member's export (identity's export job asks page after page). */
    export: (d: z.output<typeof ExportMemberDataRequest>, meta: ServiceMeta) =>
      exportPage(pool, sections, { tenantId: meta.tenant_id, memberId: d.member_id, cursor: d.cursor }),

    async erase(d: z.output<typeof EraseMemberDataRequest>, meta: ServiceMeta) {
      const pattern = personalPattern(d.personal);
      const tenantMember = [meta.tenant_id, d.member_id];
      const changed = await withTransaction(pool, async (db) => {
        const metadata = await db.query(
          `UPDATE ledger.journal SET metadata = NULL WHERE tenant_id = $1 AND member_id = $2 AND metadata IS NOT NULL`,
          tenantMember,
        );
        // The reason staff gave for a tier set by hand is free text about the member (as the
        // audit details that carried it): it goes, the tier stays (still marked as set by hand).
        const tierReasons = await db.query(
          `UPDATE ledger.member_tiers SET manual_reason = '${ERASED}'
            WHERE tenant_id = $1 AND member_id = $2 AND manual_reason IS NOT NULL AND manual_reason <> '${ERASED}'`,
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
          tier_reasons: tierReasons.rowCount ?? 0,
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
