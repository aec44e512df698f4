import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { Redis } from 'ioredis';
import { AppError, type ErrorCode } from '@loyalty/contracts';
import type { GatewayConfig } from '../config.ts';
import type { CredentialResolver } from '../credentials.ts';
import { header } from '../headers.ts';
import { sharedRateLimitStore } from '../rate-limit-store.ts';

export interface RateLimitOptions {
  config: Pick<
    GatewayConfig,
    | 'RATE_LIMIT_MAX'
    | 'RATE_LIMIT_WINDOW_MS'
    | 'RATE_LIMIT_SYNC_MS'
    | 'REDIS_KEY_PREFIX'
    | 'AUTH_FAILURE_LIMIT'
    | 'AUTH_FAILURE_WINDOW_MS'
    | 'OPERATOR_RATE_LIMIT_MAX'
    | 'STAFF_RATE_LIMIT_MAX'
    | 'IP_RATE_LIMIT_MAX'
  >;
  redis: Redis;
  credentials: CredentialResolver;
}

/** The failures that count against an address: someone presenting credentials that are not valid. */
const AUTH_FAILURES = new Set<ErrorCode>([
  'missing_credentials',
  'invalid_credentials',
  'invalid_operator_token',
  'invalid_staff_token',
]);

const isApi = (url: string) => url.startsWith('/api/v1/');
const isOperatorApi = (url: string) => url.startsWith('/admin/v1/');
const isStaffApi = (url: string) => url.startsWith('/staff/v1/');

/** The name of the per-app quota policy in the RateLimit and RateLimit-Policy fields. */
const RATE_POLICY = 'default';

/** `ms` as whole seconds for a message ("60 seconds", "1 second"); `up` rounds a wait up, not down. */
function seconds(ms: number, up = false): string {
  const n = up ? Math.max(1, Math.ceil(ms / 1000)) : Math.max(1, Math.round(ms / 1000));
  return n === 1 ? '1 second' : `${n} seconds`;
}

function limited(message: string, ttlMs: number): AppError {
  return new AppError('rate_limited', message, { retry_after_seconds: Math.max(1, Math.ceil(ttlMs / 1000)) });
}

/**
 * The limits of the edge, all counted in one shared store (rate-limit-store.ts), keys prefixed:
 * - per app (`<app id>`): RATE_LIMIT_MAX requests per window on the `/api/v1` routes, counted after
 *   authentication (`config: { rateLimit: {} }`);
 * - per client address, before authentication: failed authentications (`auth-fail:<ip>`, see
 *   AUTH_FAILURES) past AUTH_FAILURE_LIMIT per AUTH_FAILURE_WINDOW_MS refuse the address's requests
 *   to both APIs without asking identity, except an app key this replica verified recently (cached:
 *   it costs no identity query, so apps behind the same address keep working while it lasts);
 *   operator API requests (`op:<ip>`) past OPERATOR_RATE_LIMIT_MAX; staff API requests
 *   (`staff:<ip>`) past STAFF_RATE_LIMIT_MAX; everything else, unknown
 *   routes included (`ip:<ip>`), past IP_RATE_LIMIT_MAX.
 * Every refusal is 429 `rate_limited` with Retry-After. The client address is the TCP peer unless
 * TRUST_PROXY says which proxies' X-Forwarded-For to believe.
 */
export const rateLimiting = fp<RateLimitOptions>(
  async (app, { config, redis, credentials }) => {
    const store = sharedRateLimitStore(redis, `${config.REDIS_KEY_PREFIX}rate:`, config.RATE_LIMIT_SYNC_MS);
    const window = config.RATE_LIMIT_WINDOW_MS;

    app.addHook('onRequest', addressLimits(store, config, credentials));

    app.addHook('onError', async (req, _reply, err) => {
      if (err instanceof AppError && AUTH_FAILURES.has(err.code))
        store.hit(`auth-fail:${req.ip}`, config.AUTH_FAILURE_WINDOW_MS);
    });

    await app.register(rateLimit, {
      global: false,
      hook: 'preHandler',
      max: config.RATE_LIMIT_MAX,
      timeWindow: config.RATE_LIMIT_WINDOW_MS,
      // Counted in this replica and shared through Redis every RATE_LIMIT_SYNC_MS (rate-limit-store.ts).
      store: store.Store,
      keyGenerator: (req) => req.auth?.app_id ?? `ip:${req.ip}`,
      errorResponseBuilder: (_req, ctx) =>
        Object.assign(
          new AppError(
            'rate_limited',
            `Rate limit of ${ctx.max} requests per ${seconds(window)} reached; retry after ${seconds(ctx.ttl, true)}.`,
            { retry_after_seconds: Math.max(1, Math.ceil(ctx.ttl / 1000)) },
          ),
          { statusCode: 429 },
        ),
    });

    app.addHook('onSend', draftRateLimitFields(config.RATE_LIMIT_MAX, window));
  },
  { name: 'gateway-rate-limit', fastify: '5.x', dependencies: ['gateway-credentials'] },
);

/**
 * The per-address limits, before authentication: failed authentications, then the operator and
 * staff APIs' own counts; everything else (unknown routes included) under IP_RATE_LIMIT_MAX.
 */
function addressLimits(
  store: ReturnType<typeof sharedRateLimitStore>,
  config: RateLimitOptions['config'],
  credentials: CredentialResolver,
) {
  const window = config.RATE_LIMIT_WINDOW_MS;
  const cachedAppKey = (req: FastifyRequest) => {
    const appId = header(req, 'x-app-id');
    const apiKey = header(req, 'x-api-key');
    return appId !== undefined && apiKey !== undefined && credentials.isCached(appId, apiKey);
  };
  return async (req: FastifyRequest): Promise<void> => {
    const url = req.routeOptions.url;
    if (url === undefined || !(isApi(url) || isOperatorApi(url) || isStaffApi(url))) {
      const n = store.hit(`ip:${req.ip}`, window);
      if (n.current > config.IP_RATE_LIMIT_MAX)
        throw limited(`Rate limit of ${config.IP_RATE_LIMIT_MAX} requests per address reached.`, n.ttl);
      return;
    }
    const failures = store.peek(`auth-fail:${req.ip}`);
    if (failures.current >= config.AUTH_FAILURE_LIMIT && !(isApi(url) && cachedAppKey(req)))
      throw limited('Too many failed authentications from this address.', failures.ttl);
    if (isOperatorApi(url)) {
      const n = store.hit(`op:${req.ip}`, window);
      if (n.current > config.OPERATOR_RATE_LIMIT_MAX)
        throw limited(`Rate limit of ${config.OPERATOR_RATE_LIMIT_MAX} operator requests reached.`, n.ttl);
    }
    if (isStaffApi(url)) {
      const n = store.hit(`staff:${req.ip}`, window);
      if (n.current > config.STAFF_RATE_LIMIT_MAX)
        throw limited(`Rate limit of ${config.STAFF_RATE_LIMIT_MAX} staff requests reached.`, n.ttl);
    }
  };
}

/**
 * The per-app limit in the IETF draft's fields too (draft-ietf-httpapi-ratelimit-headers: a
 * Structured Fields list of quota policies and their current state), next to the X-RateLimit-*
 * fields @fastify/rate-limit writes on the responses it counted, 429 included.
 */
function draftRateLimitFields(max: number, windowMs: number) {
  const policy = `"${RATE_POLICY}";q=${max};w=${Math.max(1, Math.ceil(windowMs / 1000))}`;
  return async (_req: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> => {
    const remaining = reply.getHeader('x-ratelimit-remaining');
    const reset = reply.getHeader('x-ratelimit-reset');
    if (remaining === undefined || reset === undefined) return payload;
    reply.header('RateLimit-Policy', policy);
    reply.header('RateLimit', `"${RATE_POLICY}";r=${Number(remaining)};t=${Number(reset)}`);
    return payload;
  };
}
