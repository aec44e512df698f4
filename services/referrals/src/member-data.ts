import type { z } from 'zod';
import type { EraseMemberDataRequest, ServiceMeta } from '@loyalty/contracts';
import { erasePersonalTextInSharedTables, personalPattern, withTransaction, type Pool } from '@loyalty/runtime';

/**
 * The referrals service's part of a member's erasure. Referrals and codes hold ids, random codes,
 * bonuses and times, no personal data: they stay (the bonuses paid are in the books). What may
 * carry the member's name, email or phone is free text: event payloads and stored responses.
 * Idempotent.
 */
export function referralsMemberData(pool: Pool) {
  return {
    async erase(d: z.output<typeof EraseMemberDataRequest>, _meta: ServiceMeta) {
      const pattern = personalPattern(d.personal);
      const changed = await withTransaction(pool, (db) => erasePersonalTextInSharedTables(db, 'referrals', pattern));
      return { changed };
    },
  };
}
export type ReferralsMemberData = ReturnType<typeof referralsMemberData>;
