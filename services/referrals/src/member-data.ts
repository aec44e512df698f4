import type { z } from 'zod';
import type { EraseMemberDataRequest, ExportMemberDataRequest, ServiceMeta } from '@loyalty/contracts';
import {
  erasePersonalTextInSharedTables,
  exportPage,
  personalPattern,
  withTransaction,
  type ExportSection,
  type Pool,
} from '@loyalty/runtime';

/** The member's referral codes and the referrals they made or were made by, for their export. */
const sections: ExportSection[] = [
  {
    name: 'referral_codes',
    query: `SELECT card_id AS key, to_jsonb(c) AS row FROM referrals.referral_codes c
             WHERE tenant_id = $1 AND member_id = $2 AND card_id > $3 ORDER BY card_id LIMIT $4`,
  },
  {
    name: 'referrals',
    query: `SELECT id AS key, to_jsonb(r) - 'apply_key' AS row FROM referrals.referrals r
             WHERE tenant_id = $1 AND (referrer_id = $2 OR referee_id = $2) AND id > $3 ORDER BY id LIMIT $4`,
  },
];

/**
 * The referrals service's part of a member's erasure. Referrals and codes hold ids, random codes,
 * bonuses and times, no personal data: they stay (the bonuses paid are in the books). What may
 * carry the member's name, email or phone is free text: event payloads and stored responses.
 * Idempotent.
 */
export function referralsMemberData(pool: Pool) {
  return {
    /** One page of the member's export. */
    export: (d: z.output<typeof ExportMemberDataRequest>, meta: ServiceMeta) =>
      exportPage(pool, sections, { tenantId: meta.tenant_id, memberId: d.member_id, cursor: d.cursor }),

    async erase(d: z.output<typeof EraseMemberDataRequest>, _meta: ServiceMeta) {
      const pattern = personalPattern(d.personal);
      const changed = await withTransaction(pool, (db) => erasePersonalTextInSharedTables(db, 'referrals', pattern));
      return { changed };
    },
  };
}
export type ReferralsMemberData = ReturnType<typeof referralsMemberData>;
