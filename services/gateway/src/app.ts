import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { operations, operatorOperations, staffApiOperations, type Subjects } from '@loyalty/contracts';
import type { Logger, Metrics, NatsConnection, ServiceClient } from '@loyalty/runtime';
import type { GatewayConfig } from './config.ts';
import type { CredentialResolver } from './credentials.ts';
import type { StaffCredentialResolver } from './staff-credentials.ts';
import { cors } from './plugins/cors.ts';
import { credentials } from './plugins/credentials.ts';
import { docs } from './plugins/docs.ts';
import { clientErrorHandler, envelope, frameworkErrors } from './plugins/envelope.ts';
import { opsEndpoints } from './plugins/ops.ts';
import { rateLimiting } from './plugins/rate-limit.ts';
import { contractRoutes } from './plugins/routes.ts';
import { staffConsole } from './plugins/console.ts';
import { staffAuthentication } from './plugins/staff-auth.ts';
import { unsubscribeLinks } from './plugins/unsubscribe.ts';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** A body over the limit is read up to this many times the limit, so the client can read its 413. */
const DRAIN_FACTOR = 64;

export interface GatewayDeps {
  config: GatewayConfig;
  nc: NatsConnection;
  redis: Redis;
  subjects: Subjects;
  log: Logger;
  metrics: Metrics;
  credentials: CredentialResolver;
  /** Staff tokens, verified by identity and cached briefly. */
  staffCredentials: StaffCredentialResolver;
  /** Calls identity's operations (unsubscribe links), replies checked against their contracts. */
  identity: ServiceClient;
}

/**
 * The HTTP edge. Everything here is mechanism: authenticate, check scope and input against the
 * contract, forward one NATS message to the owning service, wrap its answer in the envelope.
 * One plugin per concern (plugins/); the order matters: the envelope's handlers and JSON parser
 * and the credentials' request decorations come before the routes that rely on them.
 */
export async function buildGateway(deps: GatewayDeps): Promise<FastifyInstance> {
  const { config, metrics } = deps;
  // Fastify's own logger type, so the instance is the FastifyInstance every plugin is typed against.
  const loggerInstance: FastifyBaseLogger = deps.log;
  const app = Fastify({
    loggerInstance,
    requestIdHeader: false,
    // Fastify's two lines per request cost about a quarter of the gateway's CPU under load; they are
    // opt-in (LOG_REQUESTS=true). Failures are logged either way and every request is in /metrics.
    logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: !config.LOG_REQUESTS }),
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    bodyLimit: config.BODY_LIMIT_BYTES,
    // `/earn/` is `/earn`: clients and proxies add trailing slashes.
    routerOptions: { ignoreTrailingSlash: true },
    frameworkErrors,
    clientErrorHandler,
    // The client address the per-address limits count against (rate-limit.ts); see TRUST_PROXY.
    trustProxy: config.TRUST_PROXY,
    return503OnClosing: true,
    forceCloseConnections: false,
    // Building the three OpenAPI documents takes seconds on a busy, memory-capped container; past
    // Fastify's default 10 s per plugin the gateway refused to start.
    pluginTimeout: 60_000,
  });
  const routes = [
    ...Object.values(operations),
    ...Object.values(operatorOperations),
    ...Object.values(staffApiOperations),
  ];
  await app.register(envelope, { metrics, routes, drainLimitBytes: DRAIN_FACTOR * config.BODY_LIMIT_BYTES });
  // Before the limits and the routes: a browser can read a 429 or a 401 only with the CORS headers.
  if (config.CORS_ORIGINS.length > 0)
    await app.register(cors, { origins: config.CORS_ORIGINS, methods: [...new Set(routes.map((r) => r.method))] });
  await app.register(credentials, { credentials: deps.credentials });
  await app.register(staffAuthentication, { staffCredentials: deps.staffCredentials });
  await app.register(rateLimiting, { config, redis: deps.redis, credentials: deps.credentials });
  await app.register(docs, { publicBaseUrl: config.PUBLIC_BASE_URL });
  await app.register(opsEndpoints, { metrics, publicMetrics: config.PUBLIC_METRICS });
  await app.register(staffConsole, { dir: config.CONSOLE_DIR });
  await app.register(unsubscribeLinks, { identity: deps.identity });
  await app.register(contractRoutes, { config, nc: deps.nc, subjects: deps.subjects, redis: deps.redis, metrics });
  return app;
}
