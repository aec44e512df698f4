import { randomBytes } from 'node:crypto';
import { localNats } from './nats.ts';
import { OPERATOR_TOKEN, REDIS_URL } from './system.ts';

/**
 * The environment of a private cluster of compiled services (support/cluster.ts) over a test
 * database: its own NATS subject root and Redis key prefix (`<prefix><8 hex>`, also answered as
 * `root`), fresh keys, the machine's NATS and Redis, a rate limit no test reaches. `extra` adds to
 * it or overrides it.
 */
export function clusterEnv(
  databaseUrl: string,
  prefix: string,
  extra: Record<string, string> = {},
): { env: Record<string, string>; root: string } {
  const root = `${prefix}${randomBytes(4).toString('hex')}`;
  const env = {
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_SIZE: '4',
    NATS_URL: localNats().url,
    REDIS_URL,
    SUBJECT_ROOT: root,
    REDIS_KEY_PREFIX: `${root}:`,
    OTP_SECRET: 'cluster-otp-secret-0123456789',
    SECRETS_KEY: randomBytes(32).toString('base64'),
    AUDIT_KEY: 'cluster-audit-key-0123456789abcdef0123456789',
    OPERATOR_TOKEN,
    RATE_LIMIT_MAX: '1000000',
    LOG_LEVEL: 'info',
    ...extra,
  };
  return { env, root };
}
