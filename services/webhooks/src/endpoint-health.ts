import type { Counter } from 'prom-client';
import {
  PeriodicTask,
  withTransaction,
  type Clock,
  type Logger,
  type Metrics,
  type Outbox,
  type Pool,
} from '@loyalty/runtime';
import { RETRY_WINDOW_MS } from './domain/retry-schedule.ts';
import { failPending } from './store/deliveries.ts';
import { disableFailing } from './store/endpoints.ts';

const BATCH = 100;

/**
 * Disables endpoints that failed every attempt for three days (`failing_since` three days back: it
 * is cleared by any success). In one transaction per batch: the endpoint disabled, its pending
 * deliveries given up (they can be redelivered once it works again), and an `endpoint_disabled`
 * event in the outbox, on which identity mails the tenant's contact (or the operator). Safe in
 * every replica: endpoints another replica's pass holds are skipped. Each endpoint it disables counts
 * in `loyalty_webhook_endpoints_disabled_total` (the alert WebhookEndpointDisabled).
 */
export class EndpointHealth {
  private readonly task: PeriodicTask<number>;
  private readonly disabledTotal?: Counter;

  constructor(
    private readonly deps: {
      pool: Pool;
      clock: Clock;
      outbox: Outbox;
      log: Logger;
      intervalMs: number;
      announce: (tenantId: number, endpointId: number) => void;
      metrics?: Metrics;
    },
  ) {
    this.disabledTotal = deps.metrics?.counter(
      'loyalty_webhook_endpoints_disabled_total',
      'Webhook endpoints disabled after failing every attempt for three days',
    );
    this.task = new PeriodicTask({
      name: 'webhook-endpoint-health',
      intervalMs: deps.intervalMs,
      run: () => this.pass(),
      log: deps.log,
    });
  }

  /** One pass now (tests; it also runs every `intervalMs`): endpoints disabled. */
  sweep(): Promise<number> {
    return this.task.runNow();
  }

  private async pass(): Promise<number> {
    let total = 0;
    for (;;) {
      const disabled = await withTransaction(this.deps.pool, async (db) => {
        const now = this.deps.clock.now();
        const rows = await disableFailing(db, now, RETRY_WINDOW_MS, BATCH);
        await failPending(
          db,
          rows.map((r) => r.id),
          now,
          'the endpoint was disabled after three days of failures',
        );
        for (const e of rows)
          await this.deps.outbox.record(db, {
            type: 'endpoint_disabled',
            tenantId: e.tenant_id,
            occurredAt: now,
            data: {
              endpoint_id: e.id,
              url: e.url,
              failing_since: e.failing_since?.toISOString() ?? null,
              disabled_at: now.toISOString(),
              last_error: e.last_error,
            },
          });
        return rows;
      });
      for (const e of disabled) {
        this.deps.announce(e.tenant_id, e.id);
        this.deps.log.warn(
          { endpoint: e.id, tenant: e.tenant_id, since: e.failing_since },
          'webhook endpoint disabled after three days of failures',
        );
      }
      total += disabled.length;
      if (disabled.length > 0) this.disabledTotal?.inc(disabled.length);
      if (disabled.length < BATCH) return total;
    }
  }

  start(): void {
    this.task.start();
  }

  stop(): Promise<void> {
    return this.task.stop();
  }
}
