import type { Clock, Logger, Metrics, Outbox, Pool } from '@loyalty/runtime';
import type { WebhooksConfig } from './config.ts';
import type { Dispatcher } from './dispatcher.ts';
import { EndpointHealth } from './endpoint-health.ts';
import { RetryPoller } from './retry-poller.ts';

/**
 * What the webhooks service does on its own, in every replica: the retry poller takes due
 * deliveries (retries, overflow, what a dead replica's lease handed back) into this replica's
 * dispatcher; the endpoint health sweeper disables endpoints failing for three days.
 */
export function webhooksTasks(
  deps: { pool: Pool; clock: Clock; log: Logger; outbox: Outbox; dispatcher: Dispatcher; metrics?: Metrics },
  config: Pick<WebhooksConfig, 'WEBHOOK_POLL_INTERVAL_MS' | 'WEBHOOK_LEASE_MS' | 'WEBHOOK_SWEEP_INTERVAL_MS'>,
  announce: (tenantId: number, endpointId: number) => void,
): { retryPoller: RetryPoller; healthSweeper: EndpointHealth } {
  const { pool, clock, log, outbox, dispatcher, metrics } = deps;
  return {
    retryPoller: new RetryPoller({
      pool,
      clock,
      dispatcher,
      log,
      intervalMs: config.WEBHOOK_POLL_INTERVAL_MS,
      leaseMs: config.WEBHOOK_LEASE_MS,
    }),
    healthSweeper: new EndpointHealth({
      pool,
      clock,
      outbox,
      log,
      intervalMs: config.WEBHOOK_SWEEP_INTERVAL_MS,
      announce,
      metrics,
    }),
  };
}
