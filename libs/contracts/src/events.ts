/**
 * Domain events on JetStream, subject `loyalty.events.<service>.<event>`. Every event has the same
 * envelope; `data` is the event's own shape (see each service's event schemas).
 */
export interface DomainEvent<T = Record<string, unknown>> {
  /** Unique id; also the JetStream `Nats-Msg-Id`, so a re-published event is dropped as a duplicate. */
  id: string;
  /** `<service>.<event>`, e.g. `ledger.points_earned`. */
  type: string;
  tenant_id: number;
  occurred_at: string;
  data: T;
}
