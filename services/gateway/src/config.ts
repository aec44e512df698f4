import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { commonEnv, loadConfig } from '@loyalty/runtime';

/** The built staff console: `console/dist` of the repository (this file and dist/main.js are both 3 levels down). */
const defaultConsoleDir = fileURLToPath(new URL('../../../console/dist', import.meta.url));

export const GatewayConfig = z.object({
  ...commonEnv,
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  /** The ops port (/healthz, /readyz, /metrics); the main port answers /healthz (and /metrics with PUBLIC_METRICS). */
  OPS_PORT: z.coerce.number().int().min(0).max(65535).default(9100),
  REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
  /** Prefix of every Redis key this gateway writes (rate-limit counters, Idempotency-Key claims). */
  REDIS_KEY_PREFIX: z.string().default('loyalty:'),
  /** Requests allowed per app per window. */
  RATE_LIMIT_MAX: z.coerce.number().int().positive().default(6000),
  RATE_LIMIT_WINDOW_MS: z.coerce.number().int().positive().default(60_000),
  /**
   * Failed authentications (401 missing/invalid app credentials or operator token) allowed per
   * client address per AUTH_FAILURE_WINDOW_MS; past it the address gets 429 before identity is asked.
   */
  AUTH_FAILURE_LIMIT: z.coerce.number().int().positive().default(20),
  AUTH_FAILURE_WINDOW_MS: z.coerce.number().int().positive().default(60_000),
  /** Operator API (/admin/v1) requests allowed per client address per RATE_LIMIT_WINDOW_MS. */
  OPERATOR_RATE_LIMIT_MAX: z.coerce.number().int().positive().default(1_200),
  /** Staff API (/staff/v1, the console) requests allowed per client address per RATE_LIMIT_WINDOW_MS. */
  STAFF_RATE_LIMIT_MAX: z.coerce.number().int().positive().default(1_200),
  /** Where the built staff console is (served at /console). */
  CONSOLE_DIR: z.string().min(1).default(defaultConsoleDir),
  /** Requests per client address per RATE_LIMIT_WINDOW_MS outside the APIs (unknown routes, docs, health, the console's files). */
  IP_RATE_LIMIT_MAX: z.coerce.number().int().positive().default(600),
  /**
   * Fastify's `trustProxy`: unset, the client address is the TCP peer and X-Forwarded-For is ignored.
   * `true` trusts every hop; otherwise a comma-separated list of the proxies' addresses/CIDRs. Set it
   * only behind a proxy that overwrites X-Forwarded-For, or any client picks the address it is
   * counted against by the per-address limits.
   */
  TRUST_PROXY: z
    .string()
    .optional()
    .transform((v): boolean | string => (v === undefined || v === '' || v === 'false' ? false : v === 'true' || v)),
  /** Serve /metrics on the public port too (it is always on the ops port). */
  PUBLIC_METRICS: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  /** How often each replica adds its counted requests to the shared counters in Redis (see rate-limit-store.ts). */
  RATE_LIMIT_SYNC_MS: z.coerce.number().int().positive().default(100),
  /** How long to wait for the owning service before answering 503 service_unavailable. */
  REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
  /**
   * How long a verified app key, member token or staff token is trusted without asking identity
   * again: the hard bound on how long a revoked key or ended session can still work on a replica
   * that missed the eviction broadcast (broadcasts normally evict it at once; see credentials.ts and
   * staff-credentials.ts).
   */
  AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).default(30_000),
  /** Bearer token of the operator (provisioning) API under /admin/v1. Unset: the admin API refuses every call. */
  OPERATOR_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Log a line when each request arrives and when it is answered (off: ~25 % of the gateway's CPU under load). */
  LOG_REQUESTS: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(64 * 1024),
  /**
   * Origins (comma-separated, exact: `https://shop.example.com`) whose browser apps may call the
   * APIs directly (CORS, plugins/cors.ts). Unset: no CORS headers, and browsers refuse cross-origin calls.
   */
  CORS_ORIGINS: z
    .string()
    .optional()
    .transform((v) =>
      (v ?? '')
        .split(',')
        .map((o) => o.trim())
        .filter((o) => o !== ''),
    )
    .pipe(z.array(z.string().refine(isOrigin, 'each origin must be exact, e.g. https://shop.example.com'))),
  /** Base URL written into the OpenAPI document's servers list. */
  PUBLIC_BASE_URL: z.string().default('/'),
});
/** `scheme://host[:port]` and nothing else (no path, no wildcard), as a browser sends it in `Origin`. */
function isOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value && !value.includes('*');
  } catch {
    return false;
  }
}

export type GatewayConfig = z.infer<typeof GatewayConfig>;

export const readConfig = (env: Record<string, string | undefined> = process.env) => loadConfig(GatewayConfig, env);
