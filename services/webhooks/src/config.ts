import { z } from 'zod';
import { commonEnv, databaseEnv, loadConfig } from '@loyalty/runtime';
import { parseMasterKey } from './domain/envelope.ts';

const int = (min: number, max: number, fallback: number) => z.coerce.number().int().min(min).max(max).default(fallback);

/** A key-encryption key: base64 of 32 bytes. The message never repeats the value. */
const masterKey = z.string().transform((value, ctx) => {
  const key = parseMasterKey(value);
  if (typeof key === 'string') {
    ctx.addIssue({ code: 'custom', message: key });
    return z.NEVER;
  }
  return key;
});

export const WebhooksConfig = z.object({
  ...commonEnv,
  ...databaseEnv,
  OPS_PORT: int(0, 65535, 9105),
  /**
   * The key-encryption key of the endpoints' signing secrets (envelope encryption: it wraps one
   * data key per tenant). Base64 of 32 random bytes: `openssl rand -base64 32`. Required.
   */
  SECRETS_KEY: masterKey,
  /**
   * The SECRETS_KEY before a rotation: still read, while the service rewraps every tenant's data
   * key under the new SECRETS_KEY (loyalty_webhook_secrets_pending shows what is left). Remove it
   * once that is 0.
   */
  SECRETS_KEY_PREVIOUS: z
    .string()
    .optional()
    .transform((v) => v || undefined)
    .pipe(masterKey.optional()),
  /** Upper bound of one call to identity (is the tenant of an operator call there?). */
  REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
  /**
   * `true` lets endpoints point at private, loopback, link-local and other non-public addresses
   * (local development and the tests, whose receivers listen on 127.0.0.1). Never in production:
   * it would let a tenant make the platform call its internal network.
   */
  WEBHOOK_ALLOW_PRIVATE_TARGETS: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  /** An attempt without a 2xx answer within this time fails (the interface promises 10 s). */
  WEBHOOK_TIMEOUT_MS: int(100, 60_000, 10_000),
  /** Attempts in flight at once per endpoint, per replica. */
  WEBHOOK_ENDPOINT_CONCURRENCY: int(1, 256, 16),
  /** Attempts in flight at once per tenant, per replica: one tenant's many slow endpoints cannot take every slot. */
  WEBHOOK_TENANT_CONCURRENCY: int(1, 4096, 64),
  /** Attempts in flight at once per replica (open sockets). */
  WEBHOOK_MAX_IN_FLIGHT: int(1, 16_384, 512),
  /** Deliveries a replica holds in memory, waiting for a slot (the rest waits in the database). */
  WEBHOOK_MAX_QUEUED: int(100, 1_000_000, 4_000),
  /**
   * How long a replica owns a delivery it took (in memory or in flight); a replica that dies
   * hands its deliveries back when this runs out. Longer than the timeout with room to spare.
   */
  WEBHOOK_LEASE_MS: int(5_000, 3_600_000, 60_000),
  /** How often each replica looks for deliveries due for a retry (it is also woken when it has room). */
  WEBHOOK_POLL_INTERVAL_MS: int(10, 60_000, 500),
  /** How often each replica disables endpoints that failed every delivery for three days. */
  WEBHOOK_SWEEP_INTERVAL_MS: int(1_000, 3_600_000, 60_000),
  /** Endpoints a tenant may have. */
  WEBHOOK_MAX_ENDPOINTS_PER_TENANT: int(1, 1_000, 16),
  /**
   * The backlog metrics name this many tenants (those with the most pending deliveries) and sum up
   * the rest as `tenant="other"`, so a scrape stays small however many tenants there are.
   */
  WEBHOOK_METRICS_TOP_TENANTS: int(0, 100, 10),
  /** Days the delivery log (events, deliveries, attempts) and deleted endpoints are kept. */
  WEBHOOK_RETENTION_DAYS: int(4, 3_650, 30),
});
export type WebhooksConfig = z.infer<typeof WebhooksConfig>;

export const readConfig = (env: Record<string, string | undefined> = process.env) => loadConfig(WebhooksConfig, env);
