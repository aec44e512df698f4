import type { Outbox, Queryable } from '@loyalty/runtime';
import { maskEmail, maskPhone } from './domain/masking.ts';
import type { Member } from './store/members.ts';

/**
 * identity's domain events (`<root>.events.identity.<event>`), written in the transaction of the
 * change they describe. `member_registered`: a member was created by registration or by a
 * purchase (earn) naming a new email or phone; contact data masked as in API responses.
 */
export function recordMemberRegistered(
  db: Queryable,
  outbox: Outbox,
  member: Member,
  source: 'registration' | 'purchase',
  at: Date,
): Promise<string> {
  return outbox.record(db, {
    type: 'member_registered',
    tenantId: member.tenant_id,
    occurredAt: at,
    data: {
      member_id: member.id,
      name: member.name,
      email: maskEmail(member.email) ?? null,
      phone: maskPhone(member.phone) ?? null,
      source,
    },
  });
}
