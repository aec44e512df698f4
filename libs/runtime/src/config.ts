import { z } from 'zod';

/** Thrown at start when the environment does not fit a service's config schema. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Validate the environment once into one typed object. The message names every missing or
 * wrong variable, so an operator can fix them all in one go.
 */
export function loadConfig<S extends z.ZodObject>(
  schema: S,
  env: Record<string, string | undefined> = process.env,
): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
  throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
}

/** Variables every service reads. */
export const commonEnv = {
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  NATS_URL: z.string().default('nats://127.0.0.1:4222'),
  /** This process's NATS user and password; without them the connection is anonymous (only for an open server). */
  NATS_USER: z.string().min(1).optional(),
  NATS_PASSWORD: z.string().min(1).optional(),
  /** CA certificate (PEM path) of the NATS server: when set, the connection requires TLS. */
  NATS_TLS_CA: z.string().min(1).optional(),
  /** Root of every subject and of the JetStream stream name (`loyalty`). */
  SUBJECT_ROOT: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only')
    .default('loyalty'),
  /** Port of the small HTTP server answering /healthz, /readyz and /metrics (0 = any free port). */
  OPS_PORT: z.coerce.number().int().min(0).max(65535).default(9100),
  OPS_HOST: z.string().default('0.0.0.0'),
  /** Upper bound for graceful shutdown, after which the process exits anyway. */
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /**
   * OpenTelemetry (tracing.ts; read at start, before the rest of the configuration): spans are
   * exported over OTLP/HTTP to `<endpoint>/v1/traces` when set (empty: tracing off).
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.union([z.literal(''), z.url()]).optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.union([z.literal(''), z.url()]).optional(),
  /** Share of new traces kept (parent-based: a sampled caller's trace is always continued). */
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).optional(),
  /** The name spans are exported under (default `loyalty-<service>`). */
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
};

/** Variables of services that own a Postgres schema. */
export const databaseEnv = {
  DATABASE_URL: z.string().default('postgres://postgres@127.0.0.1:5432/loyalty'),
  DATABASE_POOL_SIZE: z.coerce.number().int().positive().default(10),
  /** Run this service's migrations at start (the Kubernetes migration Job sets it to false). */
  MIGRATE_ON_START: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  /** Pause between two passes of the purge of old idempotency records, processed-event ids and the like. */
  PURGE_INTERVAL_MS: z.coerce.number().int().positive().default(600_000),
};
