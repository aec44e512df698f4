import type { Subjects } from '@loyalty/contracts';
import { recordEvent, type Queryable } from '@loyalty/runtime';
import { domainEventName, type JournalEvent } from './domain/journal.ts';

/**
 * The domain event of one journal entry, written in the entry's transaction (transactional outbox):
 * `<root>.events.ledger.<cashback_earned|points_earned|...>`. Every event names the member, the
 * card, the transaction and its amounts.
 */
export function recordJournalEvent(
  db: Queryable,
  subjects: Subjects,
  e: { tenantId: number; event: JournalEvent; at: Date; data: { member_id: number; card_id: number; transaction_id: number } & Record<string, unknown> },
): Promise<string> {
  return recordEvent(db, 'ledger', subjects, 'ledger', {
    type: domainEventName(e.event),
    tenantId: e.tenantId,
    occurredAt: e.at,
    data: { ...e.data, event: e.event },
  });
}
