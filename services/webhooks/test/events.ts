import { randomUUID } from 'node:crypto';
import type { NatsConnection } from 'nats';
import type { DomainEvent, Subjects } from '@loyalty/contracts';

let tx = 0;

/** A `ledger.points_earned` domain event as the ledger writes it (data fields included). */
export function pointsEarned(tenantId: number, at: Date, memberId = 7, points = 10): DomainEvent {
  tx += 1;
  return {
    id: randomUUID(),
    type: 'ledger.points_earned',
    tenant_id: tenantId,
    occurred_at: at.toISOString(),
    data: {
      member_id: memberId,
      card_id: 3,
      points,
      purchase_amount: points,
      reference: null,
      event: 'staff_added_points',
      transaction_id: tx,
      previous_balance: 0,
      new_balance: points,
    },
  };
}

/** Publish domain events on the stream as a service's outbox relay does (Nats-Msg-Id = `msgId` or the event id). */
export async function publishEvents(
  nc: NatsConnection,
  subjects: Subjects,
  events: DomainEvent[],
  msgId?: (e: DomainEvent) => string,
): Promise<void> {
  const js = nc.jetstream();
  await Promise.all(
    events.map((e) => {
      const [service, name] = e.type.split('.') as ['ledger', string];
      return js.publish(subjects.event(service, name), JSON.stringify(e), { msgID: msgId ? msgId(e) : e.id });
    }),
  );
}
