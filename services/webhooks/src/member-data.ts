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
 * The webhooks service's part of a member's erasure: the stored bodies of the tenant's events
 * (what deliveries and redeliveries send) and the delivery logs' error texts are rewritten where
 * they carry the member's name, email or phone; ids, types, times and outcomes stay. A member's
 * event names them by id only, except `member.registered`, whose name goes with the pattern.
 * Idempotent.
 */
/** The members an event's data names (a movement's member, a referral's parties, a transfer's). */
const MEMBER_FIELDS = `ARRAY['member_id', 'referrer_id', 'referee_id', 'from_member_id', 'to_member_id']`;

/** The deliveries of events naming the member, with the body each carried, for their export. */
const sections: ExportSection[] = [
  {
    name: 'deliveries',
    query: `SELECT d.id AS key,
                   jsonb_build_object('delivery_id', d.id, 'endpoint_id', d.endpoint_id, 'status', d.status,
                     'attempt_count', d.attempt_count, 'created_at', d.created_at, 'delivered_at', d.delivered_at,
                     'event', e.body::jsonb) AS row
              FROM webhooks.deliveries d JOIN webhooks.events e ON e.id = d.event_id
             WHERE d.tenant_id = $1 AND d.id > $3
               AND EXISTS (SELECT 1 FROM jsonb_each(e.body::jsonb -> 'data') f
                            WHERE f.key = ANY(${MEMBER_FIELDS}) AND f.value = to_jsonb($2::bigint))
             ORDER BY d.id LIMIT $4`,
  },
];

export function webhooksMemberData(pool: Pool) {
  return {
    /** One page of the member's export. */
    export: (d: z.output<typeof ExportMemberDataRequest>, meta: ServiceMeta) =>
      exportPage(pool, sections, { tenantId: meta.tenant_id, memberId: d.member_id, cursor: d.cursor }),

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
