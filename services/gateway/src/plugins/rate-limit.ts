import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { Redis } from 'ioredis';
import { AppError } from '@loyalty/contracts';
import type { GatewayConfig } from '../config.ts';
import { sharedRateLimitStore } from '../rate-limit-store.ts';

export interface RateLimitOptions {
  config: Pick<GatewayConfig, 'RATE_LIMIT_MAX' | 'RATE_LIMIT_WINDOW_MS' | 'RATE_LIMIT_SYNC_MS' | 'REDIS_KEY_PREFIX'>;
  redis: Redis;
}

/**
 * Requests per app per window, for the routes that ask for it (`config: { rateLimit: {} }`),
 * counted after authentication (keyed by app, else by IP) and answered with 429 `rate_limited`.
 */
export const rateLimiting = fp<RateLimitOptions>(
  async (app, { config, redis }) => {
    await app.register(rateLimit, {
      global: false,
      hook: 'preHandler',
      max: config.RATE_LIMIT_MAX,
      timeWindow: config.RATE_LIMIT_WINDOW_MS,
      // Counted in this replica and shared through Redis every RATE_LIMIT_SYNC_MS (rate-limit-store.ts).
      store: sharedRateLimitStore(redis, `${config.REDIS_KEY_PREFIX}rate:`, config.RATE_LIMIT_SYNC_MS).Store,
      keyGenerator: (req) => req.auth?.app_id ?? req.ip,
      errorResponseBuilder: (_req, ctx) =>
        Object.assign(
          new AppError('rate_limited', `Rate limit of ${ctx.max} requests per ${ctx.after} reached.`, {
            retry_after_seconds: Math.ceil(ctx.ttl / 1000),
          }),
          {
            statusCode: 429,
          },
        ),
    });
  },
  { name: 'gateway-rate-limit', fastify: '5.x', dependencies: ['gateway-credentials'] },
);
