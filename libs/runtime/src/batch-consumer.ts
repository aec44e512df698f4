import { AckPolicy, DeliverPolicy, type ConsumerMessages, type JsMsg, type NatsConnection } from 'nats';
import type { DomainEvent, Subjects } from '@loyalty/contracts';
import { errorMessage, type Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';
import { contextOf, inSpan, linkTo, SpanKind, TRACEPARENT, tracingOn } from './tracing.ts';

/**
 * A durable JetStream consumer that hands events to its handler in batches: what arrived in one
 * event-loop turn (a socket read of JetStream messages), up to `maxBatch`, goes in one call, and
 * while `batches` calls are in flight the next batch grows (group commit, as the ledger's posting
 * batcher does). The events of a batch are acknowledged after the handler resolves; a failed
 * batch is redelivered. So a handler may see an event again (a crash between its commit and the
 * acknowledgements, a failure): it must be idempotent itself (for example a unique key with
 * `ON CONFLICT DO NOTHING`). Replicas share the durable, so each event goes to one of them.
 */
export class EventBatchConsumer {
  private messages: ConsumerMessages | undefined;
  private loop: Promise<void> | undefined;
  private stopped = false;
  private pending: JsMsg[] = [];
  private scheduled = false;
  private inFlight = 0;
  private readonly running = new Set<Promise<void>>();
  private wakeReader: (() => void) | undefined;

  constructor(
    private readonly opts: {
      nc: NatsConnection;
      subjects: Subjects;
      /** Durable name, unique per consuming service and purpose, e.g. `webhooks-intake`. */
      durable: string;
      /** Subject filter, e.g. `subjects.allEvents()`. */
      filterSubject: string;
      log: Logger;
      metrics?: Metrics;
      /** Handle a batch of events (idempotently); throwing redelivers all of them. */
      handle: (events: DomainEvent[]) => Promise<void>;
      /** Largest batch (default 256). */
      maxBatch?: number;
      /** Batches handled at once (default 2). */
      batches?: number;
      /**
       * How long a batch waits for more events after the first (default 0: what arrived in the same
       * event-loop turn). Messages of a pull consumer arrive one socket read at a time: a few
       * milliseconds make one handler call and one acknowledgement write of many.
       */
      lingerMs?: number;
    },
  ) {
    opts.metrics?.gaugeSeries(
      'loyalty_consumer_pending',
      'Events not yet delivered to or acknowledged by a consumer (lag), by consumer',
      'consumer',
      opts.durable,
      async () => {
        const jsm = await opts.nc.jetstreamManager();
        const info = await jsm.consumers.info(opts.subjects.streamName(), this.durableName());
        return info.num_pending + info.num_ack_pending;
      },
    );
  }

  private durableName(): string {
    return `${this.opts.subjects.root}-${this.opts.durable}`.replace(/[^A-Za-z0-9_-]/g, '_');
  }

  private get maxBatch(): number {
    return Math.max(1, this.opts.maxBatch ?? 256);
  }

  async start(): Promise<void> {
    const jsm = await this.opts.nc.jetstreamManager();
    const stream = this.opts.subjects.streamName();
    const durable = this.durableName();
    const buffered = this.maxBatch * Math.max(1, this.opts.batches ?? 2) * 2;
    try {
      await jsm.consumers.info(stream, durable);
    } catch {
      await jsm.consumers
        .add(stream, {
          durable_name: durable,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          filter_subject: this.opts.filterSubject,
          ack_wait: 30 * 1_000_000_000,
          max_deliver: -1,
          max_ack_pending: Math.max(1_000, buffered * 2),
        })
        .catch((err: Error) => {
          if (!/already in use|exists/i.test(err.message)) throw err;
        });
    }
    const consumer = await this.opts.nc.jetstream().consumers.get(stream, durable);
    const messages = await consumer.consume({ max_messages: buffered });
    this.messages = messages;
    this.loop = (async () => {
      for await (const msg of messages) {
        // Stopping: hand what is still buffered back for another replica; the loop must run to the
        // iterator's end (no break), or close() would never resolve.
        if (this.stopped) {
          msg.nak();
          continue;
        }
        this.pending.push(msg);
        this.schedule();
        // Back-pressure: do not take more than a few batches ahead of the handler.
        if (this.pending.length >= buffered) await new Promise<void>((r) => (this.wakeReader = r));
      }
      await Promise.all(this.running);
    })();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      this.dispatch();
    };
    // The messages of this event-loop turn (and of the linger, if any) join the batch; a full
    // batch goes at once.
    const linger = this.opts.lingerMs ?? 0;
    if (linger > 0 && this.pending.length < this.maxBatch) setTimeout(run, linger);
    else setImmediate(run);
  }

  private dispatch(): void {
    if (this.stopped) {
      for (const msg of this.pending.splice(0)) msg.nak();
      return;
    }
    const slots = Math.max(1, this.opts.batches ?? 2);
    while (this.pending.length > 0 && this.inFlight < slots) {
      const batch = this.pending.splice(0, this.maxBatch);
      this.inFlight++;
      const task = this.process(batch).finally(() => {
        this.inFlight--;
        this.running.delete(task);
        const wake = this.wakeReader;
        this.wakeReader = undefined;
        wake?.();
        if (this.pending.length > 0) this.schedule();
      });
      this.running.add(task);
    }
  }

  /** Handle one batch and acknowledge it; never throws. */
  private async process(batch: JsMsg[]): Promise<void> {
    const events: DomainEvent[] = [];
    const decoded: JsMsg[] = [];
    for (const msg of batch) {
      try {
        events.push(msg.json<DomainEvent>());
        decoded.push(msg);
      } catch {
        this.opts.log.error({ subject: msg.subject }, 'undecodable event dropped');
        msg.term();
      }
    }
    if (events.length === 0) return;
    try {
      await this.traced(decoded, events, () => this.opts.handle(events));
      for (const msg of decoded) msg.ack();
    } catch (err) {
      this.opts.log.warn(
        { err: errorMessage(err), events: events.length },
        'event batch handling failed; will be redelivered',
      );
      for (const msg of decoded) msg.nak(2_000);
    }
  }

  /**
   * With tracing on, a batch is handled in one span: a child of the first event's publishing span,
   * linked to every event's; each event's `traceparent` stays readable (`eventTrace`) for handlers
   * that carry it further (a webhook delivery).
   */
  private traced(msgs: JsMsg[], events: DomainEvent[], fn: () => Promise<void>): Promise<void> {
    if (!tracingOn()) return fn();
    const parents = msgs.map((m) => m.headers?.get(TRACEPARENT) || undefined);
    parents.forEach((t, i) => {
      const e = events[i];
      if (t && e) traces.set(e, t);
    });
    return inSpan(
      `consume ${this.opts.durable}`,
      {
        kind: SpanKind.CONSUMER,
        parent: contextOf(parents.find(Boolean)),
        links: parents.flatMap((t) => linkTo(t)),
        attributes: {
          'messaging.system': 'nats',
          'messaging.consumer.group.name': this.opts.durable,
          'messaging.batch.message_count': msgs.length,
        },
      },
      fn,
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const wake = this.wakeReader;
    this.wakeReader = undefined;
    wake?.();
    await Promise.all([this.messages?.close(), this.loop]);
    await Promise.all(this.running);
    for (const msg of this.pending.splice(0)) msg.nak();
  }
}

const traces = new WeakMap<DomainEvent, string>();

/** The `traceparent` an event arrived with in a batch (tracing on), if any. */
export function eventTrace(event: DomainEvent): string | undefined {
  return traces.get(event);
}
