import { Counter, Histogram, Registry, collectDefaultMetrics, Gauge } from 'prom-client';

const buckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Prometheus metrics of one process: its own registry, so tests can run several in one process. */
export class Metrics {
  readonly registry = new Registry();
  private readonly natsDuration: Histogram<'operation' | 'outcome'>;
  private readonly natsErrors: Counter<'operation' | 'code'>;
  private natsClientDuration?: Histogram<'to' | 'operation' | 'outcome'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly httpErrors: Counter<'route' | 'code'>;
  private readonly purgedRows: Counter<'table'>;
  private readonly cacheLookups: Counter<'cache' | 'result'>;

  constructor(service: string) {
    this.registry.setDefaultLabels({ service });
    collectDefaultMetrics({ register: this.registry });
    this.natsDuration = new Histogram({
      name: 'loyalty_nats_request_duration_seconds',
      help: 'Time to handle one request/reply message, by operation and outcome (ok or error code)',
      labelNames: ['operation', 'outcome'],
      buckets,
      registers: [this.registry],
    });
    this.natsErrors = new Counter({
      name: 'loyalty_nats_request_errors_total',
      help: 'Failure replies by operation and error code',
      labelNames: ['operation', 'code'],
      registers: [this.registry],
    });
    this.httpDuration = new Histogram({
      name: 'loyalty_http_request_duration_seconds',
      help: 'HTTP request latency by route and status',
      labelNames: ['method', 'route', 'status'],
      buckets,
      registers: [this.registry],
    });
    this.httpErrors = new Counter({
      name: 'loyalty_http_errors_total',
      help: 'HTTP failure responses by route and error code',
      labelNames: ['route', 'code'],
      registers: [this.registry],
    });
    this.purgedRows = new Counter({
      name: 'loyalty_purged_rows_total',
      help: 'Rows deleted by the periodic purge (idempotency records, processed-event ids, codes, sessions), by table',
      labelNames: ['table'],
      registers: [this.registry],
    });
    this.cacheLookups = new Counter({
      name: 'loyalty_cache_lookups_total',
      help: 'Lookups of a replica cache (credentials, cards, webhook routes), by cache and result (hit or miss)',
      labelNames: ['cache', 'result'],
      registers: [this.registry],
    });
  }

  /** Count lookups of the cache `cache` that it answered (`hit`) or that had to be loaded (`miss`). */
  cacheLookup(cache: string, result: 'hit' | 'miss', n = 1): void {
    if (n > 0) this.cacheLookups.inc({ cache, result }, n);
  }

  /** Count rows the purge deleted from `table` (a table of the service's schema). */
  purged(table: string, rows: number): void {
    this.purgedRows.inc({ table }, rows);
  }

  observeNats(operation: string, outcome: string, seconds: number): void {
    this.natsDuration.observe({ operation, outcome: outcome === 'ok' ? 'ok' : 'error' }, seconds);
    if (outcome !== 'ok') this.natsErrors.inc({ operation, code: outcome });
  }

  /**
   * A NATS request/reply round trip as the caller saw it (the gateway's forwarded requests): `to`
   * is the owning service, `outcome` ok, error (a failure reply) or unavailable (timeout or no
   * responders). Registered on first use, so only callers carry it.
   */
  observeNatsClient(to: string, operation: string, outcome: string, seconds: number): void {
    this.natsClientDuration ??= new Histogram({
      name: 'loyalty_nats_client_request_duration_seconds',
      help: 'NATS request/reply round trip seen by the caller, by owning service, operation and outcome (ok, error, unavailable)',
      labelNames: ['to', 'operation', 'outcome'],
      buckets,
      registers: [this.registry],
    });
    const o = outcome === 'ok' ? 'ok' : outcome === 'service_unavailable' ? 'unavailable' : 'error';
    this.natsClientDuration.observe({ to, operation, outcome: o }, seconds);
  }

  /** A histogram of this process's registry (no labels). */
  histogram(name: string, help: string, histogramBuckets: number[]): Histogram {
    return new Histogram({ name, help, buckets: histogramBuckets, registers: [this.registry] });
  }

  /** A counter of this process's registry (no labels). */
  counter(name: string, help: string): Counter {
    return new Counter({ name, help, registers: [this.registry] });
  }

  private readonly labelled = new Map<string, Map<string, () => Promise<number> | number>>();

  /**
   * One series of a labelled gauge read when Prometheus scrapes: every caller with the same `name`
   * adds a series to the one metric (e.g. `loyalty_consumer_pending{consumer="..."}`).
   */
  gaugeSeries(name: string, help: string, label: string, value: string, collect: () => Promise<number> | number): void {
    let series = this.labelled.get(name);
    if (!series) {
      const all = (series = new Map());
      this.labelled.set(name, all);
      new Gauge({
        name,
        help,
        labelNames: [label],
        registers: [this.registry],
        async collect() {
          await Promise.all(
            [...all].map(async ([v, read]) => {
              try {
                this.set({ [label]: v }, await read());
              } catch {
                // an unreachable dependency leaves the last value; /readyz reports the outage
              }
            }),
          );
        },
      });
    }
    series.set(value, collect);
  }

  /**
   * The database pool's use, read when Prometheus scrapes: `loyalty_db_pool_connections{state}`
   * (busy: checked out by a query or a transaction; idle), `loyalty_db_pool_waiting` (queries waiting
   * for a connection) and `loyalty_db_pool_max` (the pool's size, `DATABASE_POOL_SIZE`). Busy at
   * max with queries waiting is an exhausted pool.
   */
  databasePool(pool: { totalCount: number; idleCount: number; waitingCount: number }, max: number): void {
    const help = 'Connections of the database pool, by state (busy: checked out; idle)';
    this.gaugeSeries('loyalty_db_pool_connections', help, 'state', 'busy', () => pool.totalCount - pool.idleCount);
    this.gaugeSeries('loyalty_db_pool_connections', help, 'state', 'idle', () => pool.idleCount);
    this.gauge(
      'loyalty_db_pool_waiting',
      'Queries waiting for a connection of the database pool',
      () => pool.waitingCount,
    );
    this.gauge('loyalty_db_pool_max', 'Most connections the database pool opens (DATABASE_POOL_SIZE)', () => max);
  }

  /** A gauge whose value is read when Prometheus scrapes (outbox backlog...). */
  gauge(name: string, help: string, collect: () => Promise<number> | number): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      async collect() {
        try {
          this.set(await collect());
        } catch {
          // an unreachable dependency leaves the last value; /readyz reports the outage
        }
      },
    });
  }
}
