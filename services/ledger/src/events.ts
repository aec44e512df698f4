import type { Outbox, Queryable } from '@loyalty/runtime';
import { domainEventName, type JournalEvent } from './domain/journal.ts';
import type { PostingEvent } from './store/accounts.ts';

export type EventData = { member_id: number; card_id: number } & Record<string, unknown>;
type JournalEventInput = { tenantId: number; event: JournalEvent; at: Date; data: EventData };

/**
 * The domain events of journal entries: `<root>.events.ledger.<cashback_earned|points_earned|...>`.
 * Every event names the member, the card, the transaction and its amounts.
 */
export function journalEvents(outbox: Outbox) {
  const event = (e: JournalEventInput) => ({
    type: domainEventName(e.event),
    tenantId: e.tenantId,
    occurredAt: e.at,
    data: { ...e.data, event: e.event },
  });
  return {
    /**
     * The event of a posting (store/accounts.ts `postMany`), written by the posting's own statement,
     * which adds `transaction_id`, `previous_balance` and `new_balance` (in currency units for `cents`).
     */
    posting(unit: 'cents' | 'points', e: JournalEventInput): PostingEvent {
      return { ...outbox.event(event(e)), unit };
    },
    /** The event of a journal entry written in the caller's transaction (transactional outbox). */
    record(db: Queryable, e: JournalEventInput & { data: { transaction_id: number } }): Promise<string> {
      return outbox.record(db, event(e));
    },
  };
}
export type JournalEvents = ReturnType<typeof journalEvents>;
