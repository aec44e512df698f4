import DataLoader from 'dataloader';
import { AckPolicy, DeliverPolicy, type ConsumerMessages, type JsMsg, type NatsConnection } from 'nats';
import pLimit from 'p-limit';
import type { DomainEvent, Subjects } from '@loyalty/contracts';
import { withTransaction, type Pool, type PoolClient } from './db.ts';
import { errorMessage, type Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';
import { contextOf, inSpan, linkTo, SpanKind, TRACEPARENT, tracingOn } from './tracing.ts';

/**
 * A durable JetStream consumer whose effect happens at most once per event: the event id is
 * recorded in the same transaction as the handler's changes, and a redelivered event whose id is
 * already recorded is acknowledged without running the handler again. Replicas share the durable,
 * so each event goes to one of them.
 */
export class EventConsumer {
  private messages: ConsumerMessages | undefined;
  private loop: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly opts: {
      nc: NatsConnection;
      subjects: Subjects;
      pool: Pool;
      schema: string;
      /** Durable name, unique per consuming service and purpose, e.g. `identity-points-mail`. */
      durable: string;
      /** Subject filter, e.g. `subjects.event('ledger', 'points_earned')`. */
      filterSubject: string;
      log: Logger;
      metrics?: Metrics;
      handle: (event: DomainEvent, db: PoolClient) => Promise<void>;
      /** Events handled at once (each in its own transaction); 1 keeps the stream's order. */
      concurrency?: number;
      /**
       * A cheap check outside any transaction, asked for every event delivered in one event-loop
       * turn at once (one query for a batch, not one per event), answering in the same order: an
       * event it answers false for would change nothing, so it is acknowledged without a
       * transaction and without a processed-event record. Only for checks whose false stays a
       * no-op for the handler.
       */
      relevant?: (events: DomainEvent[]) => Promise<boolean[]>;
      /**
       * Awaited before an event's transaction opens (a pace such as a mail rate), so that waiting
       * for it never holds a database connection.
       */
      admit?: () => Promise<void>;
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

  async start(): Promise<void> {
    const jsm = await this.opts.nc.jetstreamManager();
    const stream = this.opts.subjects.streamName();
    const durable = this.durableName();
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
        })
        .catch((err: Error) => {
          if (!/already in use|exists/i.test(err.message)) throw err;
        });
    }
    const consumer = await this.opts.nc.jetstream().consumers.get(stream, durable);
    const concurrency = Math.max(1, this.opts.concurrency ?? 1);
    const buffered = Math.max(64, concurrency * 2);
    const messages = await consumer.consume({ max_messages: buffered });
    this.messages = messages;
    // With a relevance check, every buffered event may wait for it at once (so they share one
    // query); the handlers still run `concurrency` at a time, in delivery order.
    const inFlight = this.opts.relevant ? buffered : concurrency;
    const handling = pLimit(concurrency);
    const relevance = this.opts.relevant && relevanceBatcher(this.opts.relevant);
    const running = new Set<Promise<void>>();
    this.loop = (async () => {
      for await (const msg of messages) {
        // Stopping: hand what is still buffered back to the server for another replica. The loop
        // must run to the iterator's end (no break), or close() would never resolve.
        if (this.stopped) {
          msg.nak();
          continue;
        }
        const task = this.process(msg, relevance, handling).finally(() => running.delete(task));
        running.add(task);
        if (running.size >= inFlight) await Promise.race(running);
      }
      await Promise.all(running);
    })();
  }

  /** Handle one event at most once (see the class comment) and acknowledge it; never throws. */
  private async process(
    msg: JsMsg,
    relevance: DataLoader<DomainEvent, boolean> | undefined,
    handling: (fn: () => Promise<void>) => Promise<void>,
  ): Promise<void> {
    let event: DomainEvent;
    try {
      event = msg.json<DomainEvent>();
    } catch {
      this.opts.log.error({ subject: msg.subject }, 'undecodable event dropped');
      msg.term();
      return;
    }
    try {
      if (relevance && !(await relevance.load(event))) {
        msg.ack();
        return;
      }
      await handling(async () => {
        await this.opts.admit?.();
        await consumeSpan(this.opts.durable, msg, () => this.handleOnce(event));
      });
      msg.ack();
    } catch (err) {
      this.opts.log.warn(
        { err: errorMessage(err), event: event.id, type: event.type },
        'event handling failed; will be redelivered',
      );
      msg.nak(2_000);
    }
  }

  /** The handler and the event's processed record in one transaction; a recorded event is skipped. */
  private async handleOnce(event: DomainEvent): Promise<void> {
    await withTransaction(this.opts.pool, async (db) => {
      const fresh = await db.query(
        `INSERT INTO ${this.opts.schema}.processed_events (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
        [this.opts.durable, event.id],
      );
      if (fresh.rowCount === 0) return; // seen before: a redelivery has no second effect
      await this.opts.handle(event, db);
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([this.messages?.close(), this.loop]);
  }
}

/**
 * Collects the events delivered in one event-loop turn (a socket read of JetStream messages) and
 * asks `relevant` about them in one call. A failed call fails each of its events (redelivered).
 */
function relevanceBatcher(relevant: (events: DomainEvent[]) => Promise<boolean[]>): DataLoader<DomainEvent, boolean> {
  return new DataLoader<DomainEvent, boolean>(
    async (events) => {
      const answers = await relevant([...events]);
      if (answers.length !== events.length)
        throw new Error(`relevance check answered ${answers.length} of ${events.length} events`);
      return answers;
    },
    { cache: false, batchScheduleFn: (run) => setImmediate(run), maxBatchSize: 256 },
  );
}

/**
 * Run a consumer's handling of one message in a span of the trace that published it (the
 * `traceparent` header the outbox relay set), linked to the publishing span as well.
 */
export function consumeSpan<T>(durable: string, msg: JsMsg, fn: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return fn();
  const traceparent = msg.headers?.get(TRACEPARENT);
  return inSpan(
    `consume ${msg.subject}`,
    {
      kind: SpanKind.CONSUMER,
      parent: contextOf(traceparent),
      links: linkTo(traceparent),
      attributes: {
        'messaging.system': 'nats',
        'messaging.destination.name': msg.subject,
        'messaging.consumer.group.name': durable,
      },
    },
    fn,
  );
}
