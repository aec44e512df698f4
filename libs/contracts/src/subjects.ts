/**
 * NATS subjects. `loyalty.<service>.<operation>` for request/reply, `loyalty.events.<service>.<event>`
 * for JetStream domain events. The root ("loyalty") is configurable so that test runs and
 * environments sharing one NATS server never see each other's traffic.
 */
export const services = ['identity', 'ledger', 'claims', 'referrals', 'webhooks'] as const;
export type ServiceName = (typeof services)[number];

export class Subjects {
  constructor(readonly root = 'loyalty') {}
  /** Request/reply subject of one operation of a service. */
  op(service: ServiceName, operation: string): string {
    return `${this.root}.${service}.${operation}`;
  }
  /** Domain event subject. */
  event(service: ServiceName, event: string): string {
    return `${this.root}.events.${service}.${event}`;
  }
  /** Every event subject, for the JetStream stream. */
  allEvents(): string {
    return `${this.root}.events.>`;
  }
  /** Core-NATS broadcast (no queue group) telling every gateway replica to forget cached credentials. */
  credentialsChanged(): string {
    return `${this.root}.broadcast.credentials-changed`;
  }
  /** Core-NATS broadcast telling every ledger replica to forget a card it has cached (settings changed). */
  cardsChanged(): string {
    return `${this.root}.broadcast.cards-changed`;
  }
  /**
   * Core-NATS broadcast from identity telling every ledger replica to forget a member it has cached
   * (the member was erased: it is a tombstone now).
   */
  membersChanged(): string {
    return `${this.root}.broadcast.members-changed`;
  }
  /** Core-NATS broadcast telling every webhooks replica to forget an endpoint it holds (changed, disabled, deleted). */
  webhookEndpointsChanged(): string {
    return `${this.root}.broadcast.webhook-endpoints-changed`;
  }
  /** JetStream stream name for this root (stream names cannot contain dots). */
  streamName(): string {
    return `${this.root.replace(/[^A-Za-z0-9_-]/g, '_').toUpperCase()}_EVENTS`;
  }
}
