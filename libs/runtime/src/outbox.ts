import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { headers as natsHeaders, type JetStreamClient, type NatsConnection, RetentionPolicy, StorageType } from 'nats';
import type { DomainEvent, ServiceName, Subjects } from '@loyalty/contracts';
import { afterCommit, isConnectionLost, type Pool, type Queryable } from './db.ts';
import { errorMessage, type Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';
import { contextOf, inSpan, SpanKind, TRACEPARENT, traceparentOf, tracingOn } from './tracing.ts';

/**
 * Create (or keep) the JetStream stream holding every domain event of this subject root.
 * The duplicate window makes a re-published outbox row (same Nats-Msg-Id) a no-op.
 */
export async function ensureEventStream(nc: NatsConnection, subjects: Subjects): Promise<void> {
  const jsm = await nc.jetstreamManager();
  const name = subjects.streamName();
  const config = {
    name,
    subjects: [subjects.allEvents()],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    duplicate_window: 2 * 60 * 1_000_000_000, // 2 minutes, in nanoseconds
    max_age: 7 * 24 * 3600 * 1_000_000_000,
  };
  try {
    await jsm.streams.info(name);
  } catch {
    try {
      await jsm.streams.add(config);
    } catch (err) {
      // Another replica created it between our two calls.
      if (!/already in use|exists/i.test(errorMessage(err))) throw err;
    }
  }
}

/** A domain event ready for the outbox: its id, subject and envelope. */
export interface OutboxEvent {
  id: string;
  subject: string;
  envelope: DomainEvent;
  /** The `traceparent` of the operation that wrote it (tracing on), so its consumers join that trace. */
  trace: string | null;
}

/** What a service says happened: `<service>.<type>` for a tenant, with its data. */
export interface NewEvent {
  type: string;
  tenantId: number;
  data: Record<string, unknown>;
  occurredAt?: Date;
}

/**
 * The transactional outbox of one service: its `<schema>.outbox` table (defined by the runtime's
 * shared migrations) and the relay publishing it to JetStream. An event is written in the same
 * transaction as the change it describes, so it is published if and only if that change commits;
 * the relay is woken when the transaction commits, so no writer has to remember to.
 */
export class Outbox {
  private readonly relay: OutboxRelay;

  constructor(
    private readonly opts: {
      pool: Pool;
      nc: NatsConnection;
      subjects: Subjects;
      service: ServiceName;
      /** The schema holding the outbox table (default: the service's name). */
      schema?: string;
      log: Logger;
      metrics?: Metrics;
      /** A relay pass at least this often, woken or not (default 250 ms). */
      intervalMs?: number;
    },
  ) {
    this.relay = new OutboxRelay({
      pool: opts.pool,
      nc: opts.nc,
      schema: opts.schema ?? opts.service,
      log: opts.log,
      metrics: opts.metrics,
      intervalMs: opts.intervalMs,
    });
  }

  /**
   * The subject and the envelope's `type` of this service's events of `type`, for a statement that
   * writes such an event itself (its id, time and data from its own rows).
   */
  naming(type: string): { subject: string; type: string } {
    const { subjects, service } = this.opts;
    return { subject: subjects.event(service, type), type: `${service}.${type}` };
  }

  /** The envelope of a new event of this service (a fresh id; `type` becomes `<service>.<type>`). */
  event(e: NewEvent): OutboxEvent {
    const id = randomUUID();
    const { subjects, service } = this.opts;
    return {
      id,
      subject: subjects.event(service, e.type),
      envelope: {
        id,
        type: `${service}.${e.type}`,
        tenant_id: e.tenantId,
        occurred_at: (e.occurredAt ?? new Date()).toISOString(),
        data: e.data,
      },
      trace: traceparentOf() ?? null,
    };
  }

  /** Write an event with `db` (the caller's transaction, or the pool); returns its id. */
  async record(db: Queryable, e: NewEvent): Promise<string> {
    const event = this.event(e);
    await db.query(
      `INSERT INTO ${this.opts.schema ?? this.opts.service}.outbox (id, subject, payload, trace) VALUES ($1, $2, $3, $4)`,
      [event.id, event.subject, JSON.stringify(event.envelope), event.trace],
    );
    this.written(db);
    return event.id;
  }

  /** Events were written with `db` by the caller's own SQL: publish them once that commits. */
  written(db: Queryable): void {
    afterCommit(db, () => this.relay.wake());
  }

  start(): void {
    this.relay.start();
  }

  stop(): Promise<void> {
    return this.relay.stop();
  }

  /** Publish everything pending now (tests). */
  drain(): Promise<number> {
    return this.relay.drain();
  }
}

/**
 * Publishes outbox rows to JetStream. Safe in every replica: rows are claimed with
 * `FOR UPDATE SKIP LOCKED`, so two relays never publish the same batch at once, and a crash
 * after publishing but before marking only causes a re-publish that JetStream de-duplicates.
 *
 * Under load a pass per commit would publish a row or two for four round trips and a commit;
 * a wake therefore lingers `lingerMs` so that one pass takes what the commits of that time wrote.
 */
export class OutboxRelay {
  private stopped = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private lingering: NodeJS.Timeout | undefined;
  private wokenDuringPass = false;
  private lastCleanup = 0;
  private readonly js: JetStreamClient;
  private readonly batchSize: number;
  private readonly lingerMs: number;

  constructor(
    private readonly opts: {
      pool: Pool;
      nc: NatsConnection;
      schema: string;
      log: Logger;
      metrics?: Metrics;
      /** A pass at least this often, woken or not (default 250 ms). */
      intervalMs?: number;
      /** How long a wake waits for more events before the pass (default 5 ms). */
      lingerMs?: number;
      batchSize?: number;
    },
  ) {
    this.js = opts.nc.jetstream();
    this.batchSize = Math.max(1, Math.floor(opts.batchSize ?? 100));
    this.lingerMs = opts.lingerMs ?? 5;
    opts.metrics?.gauge('loyalty_outbox_backlog', 'Outbox rows not yet published', async () => {
      const { rows } = await opts.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${opts.schema}.outbox WHERE published_at IS NULL`,
      );
      return rows[0]?.n ?? 0;
    });
    opts.metrics?.gauge('loyalty_outbox_oldest_age_seconds', 'Age of the oldest unpublished outbox row', async () => {
      const { rows } = await opts.pool.query<{ age: number | null }>(
        `SELECT extract(epoch FROM now() - min(created_at))::float8 AS age FROM ${opts.schema}.outbox WHERE published_at IS NULL`,
      );
      return rows[0]?.age ?? 0;
    });
  }

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        this.wokenDuringPass = false;
        try {
          await this.drain();
        } catch (err) {
          this.opts.log.warn({ err: errorMessage(err) }, 'outbox relay pass failed; will retry');
        }
        if (this.stopped) break;
        // Rows committed while the pass ran were not in it: linger only, not a whole interval.
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, this.wokenDuringPass ? this.lingerMs : (this.opts.intervalMs ?? 250));
          this.wakeUp = () => (clearTimeout(t), resolve());
        });
        this.wakeUp = undefined;
      }
    })();
  }

  /** Ask for a pass soon (after a commit that wrote events) instead of at the next interval. */
  wake(): void {
    if (!this.wakeUp) {
      this.wokenDuringPass = true;
      return;
    }
    this.lingering ??= setTimeout(() => {
      this.lingering = undefined;
      if (this.wakeUp) this.wakeUp();
      else this.wokenDuringPass = true;
    }, this.lingerMs);
  }

  /** Publish everything pending, batch after batch. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.publishBatch();
      total += n;
      if (n < this.batchSize) return total;
    }
  }

  /**
   * Two round trips per batch: claim (BEGIN + SELECT ... FOR UPDATE SKIP LOCKED in one simple
   * query), then mark and COMMIT together after JetStream has acknowledged every message. The
   * commit does not wait for its WAL flush (synchronous_commit off for this transaction only): a
   * mark lost in a crash re-publishes rows, which JetStream drops as duplicates (Nats-Msg-Id) and
   * consumers would skip anyway (processed events).
   */
  private async publishBatch(): Promise<number> {
    const client = await this.opts.pool.connect();
    const table = `${this.opts.schema}.outbox`;
    let failure: unknown;
    try {
      // eslint-disable-next-line @typescript-eslint/consistent-type-assertions -- pg answers a multi-statement query with one result per statement; its types know one
      const claimed = (await client.query(
        `BEGIN; SET LOCAL synchronous_commit = off;
         SELECT id, subject, payload::text AS payload, trace FROM ${table} WHERE published_at IS NULL ORDER BY created_at LIMIT ${this.batchSize} FOR UPDATE SKIP LOCKED`,
      )) as unknown as pg.QueryResult<{ id: string; subject: string; payload: string; trace: string | null }>[];
      const rows = claimed[2]?.rows ?? [];
      await Promise.all(rows.map((row) => this.publish(row)));
      const cleanup = Date.now() - this.lastCleanup > 60_000;
      // Keep published rows a day for inspection, then let them go.
      if (cleanup) this.lastCleanup = Date.now();
      // The ids are the uuid column's own text (hex digits and dashes), so they are safe as literals.
      await client.query(
        [
          rows.length > 0
            ? `UPDATE ${table} SET published_at = now() WHERE id = ANY('{${rows.map((r) => r.id).join(',')}}'::uuid[])`
            : '',
          cleanup ? `DELETE FROM ${table} WHERE published_at < now() - interval '1 day'` : '',
          'COMMIT',
        ]
          .filter(Boolean)
          .join('; '),
      );
      return rows.length;
    } catch (err) {
      failure = err;
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release(failure instanceof Error && isConnectionLost(failure) ? failure : undefined);
    }
  }

  /**
   * One row to JetStream. A row written inside a traced operation is published in a span of that
   * trace, whose context goes with the message (`traceparent` header) to every consumer.
   */
  private publish(row: { id: string; subject: string; payload: string; trace: string | null }) {
    if (!row.trace || !tracingOn()) return this.js.publish(row.subject, row.payload, { msgID: row.id, timeout: 5_000 });
    return inSpan(
      `outbox publish ${row.subject}`,
      {
        kind: SpanKind.PRODUCER,
        parent: contextOf(row.trace),
        attributes: {
          'messaging.system': 'nats',
          'messaging.destination.name': row.subject,
          'messaging.message.id': row.id,
        },
      },
      () => {
        const h = natsHeaders();
        const traceparent = traceparentOf();
        if (traceparent) h.set(TRACEPARENT, traceparent);
        return this.js.publish(row.subject, row.payload, { msgID: row.id, timeout: 5_000, headers: h });
      },
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.lingering);
    this.wakeUp?.();
    await this.loop;
  }
}
