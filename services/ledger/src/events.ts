import type { Subjects } from '@loyalty/contracts';
import { eventEnvelope, recordEvent, type Queryable } from '@loyalty/runtime';
import { domainEventName, type JournalEvent } from './domain/journal.ts';
import type { PostingEvent } from './store/accounts.ts';

type EventData = { member_id: number; card_id: number } & Record<string, unknown>;

/**
 * The domain event of one journal entry: `<root>.events.ledger.<cashback_earned|points_earned|...>`.
 * Every event names the member, the card, the transaction and its amounts.
 */
function envelope(subjects: Subjects, e: { tenantId: number; event: JournalEvent; at: Date; data: EventData }) {
  return eventEnvelope(subjects, 'ledger', {
    type: domainEventName(e.event),
    tenantId: e.tenantId,
    occurredAt: e.at,
    data: { ...e.data, event: e.event },
  });
}

/**
 * The event of a posting (store/accounts.ts `post`), written by the posting's own statement, which
 * adds `transaction_id`, `previous_balance` and `new_balance` (in currency units for `cents`).
 */
export function postingEvent(
  subjects: Subjects,
  unit: 'cents' | 'points',
  e: { tenantId: number; event: JournalEvent; at: Date; data: EventData },
): PostingEvent {
  return { ...envelope(subjects, e), unit };
}

/** The event of a journal entry written in the caller's transaction (transactional outbox). */
export function recordJournalEvent(
  db: Queryable,
  subjects: Subjects,
  e: { tenantId: number; event: JournalEvent; at: Date; data: EventData & { transaction_id: number } },
): Promise<string> {
  return recordEvent(db, 'ledger', subjects, 'ledger', {
    type: domainEventName(e.event),
    tenantId: e.tenantId,
    occurredAt: e.at,
    data: { ...e.data, event: e.event },
  });
}
