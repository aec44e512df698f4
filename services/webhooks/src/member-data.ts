import type { z } from 'zod';
import type { EraseMemberDataRequest, ServiceMeta } from '@loyalty/contracts';
import {
  erasePersonalTextInSharedTables,
  personalPattern,
  rewritePersonalText,
  withTransaction,
  type Pool,
} from '@loyalty/runtime';

/**
 * The webhooks service's part of a member's erasure: the stored bodies of the tenant's events
 * (what deliveries and redeliveries send) and the delivery logs' error texts are rewritten where
 * they carry the member's name, email or phone; ids, types, times and outcomes stay. A member's
 * event names them by id only, except `member.registered`, whose name goes with the pattern.
 * Idempotent.
 */
export function webhooksMemberData(pool: Pool) {
  return {
    async erase(d: z.output<typeof EraseMemberDataRequest>, meta: ServiceMeta) {
      const pattern = personalPattern(d.personal);
      const tenant = { where: 'tenant_id = $2', args: [meta.tenant_id] };
      const changed = await withTransaction(pool, async (db) => ({
        events: await rewritePersonalText(db, { table: 'webhooks.events', column: 'body', ...tenant }, pattern),
        deliveries: await rewritePersonalText(
          db,
          { table: 'webhooks.deliveries', column: 'last_error', ...tenant },
          pattern,
        ),
        attempts: await rewritePersonalText(
          db,
          {
            table: 'webhooks.attempts',
            column: 'error',
            where: 'delivery_id IN (SELECT id FROM webhooks.deliveries WHERE tenant_id = $2)',
            args: [meta.tenant_id],
          },
          pattern,
        ),
        ...(await erasePersonalTextInSharedTables(db, 'webhooks', pattern)),
      }));
      return { changed };
    },
  };
}
export type WebhooksMemberData = ReturnType<typeof webhooksMemberData>;
