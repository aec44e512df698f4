import { Counter, Gauge, Histogram } from 'prom-client';
import type { Clock, Metrics, Pool } from '@loyalty/runtime';
import type { AttemptOutcome } from './sender.ts';
import { backlogByTenant } from './store/deliveries.ts';

/**
 * The webhooks service's own metrics, in the process's registry (beside the runtime's):
 * - `loyalty_webhook_attempts_total{outcome}`: delivered, http_error, timeout, connection_error, refused;
 * - `loyalty_webhook_deliveries_total{outcome}`: final states, delivered or failed (given up);
 * - `loyalty_webhook_attempt_duration_seconds`: from sending to the answer's status line;
 * - `loyalty_webhook_event_to_delivery_seconds{attempt}`: from the event to its 2xx, by whether the
 *   first attempt delivered it (`first`: the endpoint was healthy; the service level of 60 s is on
 *   these) or a retry did (`retry`: the endpoint had failed meanwhile);
 * - `loyalty_webhook_backlog{tenant}` and `loyalty_webhook_oldest_pending_age_seconds{tenant}`:
 *   pending deliveries and the age of the oldest, read from the database at scrape time (every
 *   replica reports the same figures: aggregate them with max, not sum), for the `topTenants`
 *   tenants with the most pending and `tenant="other"` for all the rest together. The label set
 *   is bounded (at most `topTenants + 1` series each) however many tenants there are; a tenant's
 *   own figures are in its delivery log (API and console).
 *
 * No other label of these metrics names a tenant, an endpoint or a URL: every label value comes
 * from a fixed list.
 */
export class WebhookMetrics {
  private readonly attempts: Counter<'outcome'>;
  private readonly deliveries: Counter<'outcome'>;
  private readonly duration: Histogram;
  private readonly latency: Histogram<'attempt'>;

  constructor(metrics: Metrics, pool: Pool, clock: Clock, topTenants: number) {
    const registers = [metrics.registry];
    this.attempts = new Counter({
      name: 'loyalty_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome (delivered, http_error, timeout, connection_error, refused)',
      labelNames: ['outcome'],
      registers,
    });
    this.deliveries = new Counter({
      name: 'loyalty_webhook_deliveries_total',
      help: 'Webhook deliveries that reached a final state, by outcome (delivered, failed)',
      labelNames: ['outcome'],
      registers,
    });
    this.duration = new Histogram({
      name: 'loyalty_webhook_attempt_duration_seconds',
      help: 'Time from sending a webhook to its answer (or the failure)',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.latency = new Histogram({
      name: 'loyalty_webhook_event_to_delivery_seconds',
      help: 'Time from an event to the 2xx of its delivery, by the attempt that delivered it (first or retry)',
      labelNames: ['attempt'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60, 600, 3600],
      registers,
    });
    // One query per scrape for both gauges: each one's collect awaits the same read.
    let reading: Promise<void> | undefined;
    const read = (): Promise<void> =>
      (reading ??= (async () => {
        try {
          const rows = await backlogByTenant(pool, clock.now(), topTenants);
          // A tenant that left the top (or has nothing pending) leaves no stale series behind.
          pending.reset();
          oldest.reset();
          for (const r of rows) {
            pending.set({ tenant: r.tenant }, r.pending);
            oldest.set({ tenant: r.tenant }, Math.max(0, r.oldest_s));
          }
        } catch {
          // an unreachable database leaves the last values; /readyz reports the outage
        } finally {
          setImmediate(() => (reading = undefined));
        }
      })());
    const pending: Gauge<'tenant'> = new Gauge({
      name: 'loyalty_webhook_backlog',
      help: 'Pending webhook deliveries (scheduled, retrying or in flight), for the tenants with the most and "other"',
      labelNames: ['tenant'],
      registers,
      collect: read,
    });
    const oldest: Gauge<'tenant'> = new Gauge({
      name: 'loyalty_webhook_oldest_pending_age_seconds',
      help: 'Age of the oldest pending webhook delivery, for the tenants with the most pending and "other"',
      labelNames: ['tenant'],
      registers,
      collect: read,
    });
  }

  attempt(outcome: AttemptOutcome, durationMs: number): void {
    this.attempts.inc({ outcome });
    this.duration.observe(durationMs / 1000);
  }

  /** A delivery reached its final state; a delivered one took `eventToDeliveryMs` over `attempts` attempts. */
  final(outcome: 'delivered' | 'failed', eventToDeliveryMs?: number, attempts = 1): void {
    this.deliveries.inc({ outcome });
    if (eventToDeliveryMs !== undefined)
      this.latency.observe({ attempt: attempts <= 1 ? 'first' : 'retry' }, Math.max(0, eventToDeliveryMs) / 1000);
  }
}
