import { randomUUID, timingSafeEqual } from 'node:crypto';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Redis } from 'ioredis';
import {
  AppError,
  buildOpenApiDocument,
  operations,
  operatorOperations,
  type AuthenticateReply,
  type Meta,
  type Operation,
  type Subjects,
} from '@loyalty/contracts';
import { callService, type Logger, type Metrics, type NatsConnection } from '@loyalty/runtime';
import type { GatewayConfig } from './config.ts';
import { CredentialResolver } from './credentials.ts';
import { sendFailure, sendReply } from './envelope.ts';
import { sharedRateLimitStore } from './rate-limit-store.ts';

declare module 'fastify' {
  interface FastifyRequest {
    auth?: AuthenticateReply;
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const header = (req: FastifyRequest, name: string): string | undefined => {
  const v = req.headers[name];
  return typeof v === 'string' && v.length > 0 ? v : undefined;
};

export interface GatewayDeps {
  config: GatewayConfig;
  nc: NatsConnection;
  redis: Redis;
  subjects: Subjects;
  log: Logger;
  metrics: Metrics;
  credentials: CredentialResolver;
}

/**
 * The HTTP edge. Everything here is mechanism: authenticate, check scope and input against the
 * contract, forward one NATS message to the owning service, wrap its answer in the envelope.
 */
export async function buildGateway(deps: GatewayDeps): Promise<FastifyInstance> {
  const { config, nc, subjects, metrics } = deps;
  const app = Fastify({
    loggerInstance: deps.log as FastifyBaseLogger,
    requestIdHeader: false,
    // Fastify's two lines per request cost about a quarter of the gateway's CPU under load; they are
    // opt-in (LOG_REQUESTS=true). Failures are logged either way and every request is in /metrics.
    logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: !config.LOG_REQUESTS }),
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    bodyLimit: config.BODY_LIMIT_BYTES,
    return503OnClosing: true,
    forceCloseConnections: false,
  });

  app.addHook('onRequest', async (req, reply) => {
    reply.header('X-Request-Id', req.id);
  });
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    metrics.httpDuration.observe(
      { method: req.method, route, status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
  app.addHook('onSend', async (req, reply, payload) => {
    if (reply.statusCode >= 400 && typeof payload === 'string' && payload.startsWith('{"success":false')) {
      const code = /"code":"([a-z_]+)"/.exec(payload)?.[1] ?? 'unknown';
      metrics.httpErrors.inc({ route: req.routeOptions.url ?? 'unmatched', code });
    }
    return payload;
  });

  // An empty body on a POST is an empty object, not a parse error.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, {});
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new AppError('invalid_json'), undefined);
    }
  });

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
    if (err instanceof AppError) return sendFailure(reply, err);
    if (err.statusCode === 429)
      return sendFailure(
        reply,
        new AppError('rate_limited', undefined, { retry_after_seconds: Number(reply.getHeader('retry-after') ?? 1) }),
      );
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendFailure(reply, new AppError('payload_too_large'));
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
      return sendFailure(reply, new AppError('unsupported_media_type'));
    if (err.code?.startsWith('FST_ERR_CTP') || err.statusCode === 400)
      return sendFailure(reply, new AppError('invalid_json'));
    req.log.error({ err }, 'unhandled gateway error');
    return sendFailure(reply, new AppError('internal_error'));
  });

  // Unknown route or unsupported method: both in the failure envelope.
  const knownPaths = new Map<string, Set<string>>();
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0] ?? '';
    for (const [pattern, methods] of knownPaths) {
      if (matchPath(pattern, path)) {
        reply.header('Allow', [...methods].join(', '));
        return sendFailure(
          reply,
          new AppError('method_not_allowed', `${req.method} is not allowed here; use ${[...methods].join(' or ')}.`),
        );
      }
    }
    return sendFailure(reply, new AppError('route_not_found', `No route ${req.method} ${path}.`));
  });

  await app.register(rateLimit, {
    global: false,
    hook: 'preHandler',
    max: config.RATE_LIMIT_MAX,
    timeWindow: config.RATE_LIMIT_WINDOW_MS,
    // Counted in this replica and shared through Redis every RATE_LIMIT_SYNC_MS (rate-limit-store.ts).
    store: sharedRateLimitStore(deps.redis, `${config.REDIS_KEY_PREFIX}rate:`, config.RATE_LIMIT_SYNC_MS).Store,
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

  const document = buildOpenApiDocument({ ...operations, ...operatorOperations }, config.PUBLIC_BASE_URL);
  await app.register(swagger, { mode: 'static', specification: { document: document as never } });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { logLevel: 'warn' }, async () => document);
  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
  app.get('/metrics', { logLevel: 'warn' }, async (_req, reply) =>
    reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
  );

  const authenticate = async (req: FastifyRequest, op: Operation): Promise<Meta> => {
    const appId = header(req, 'x-app-id');
    const apiKey = header(req, 'x-api-key');
    if (!appId || !apiKey) throw new AppError('missing_credentials');
    const memberToken = header(req, 'x-member-token');
    if (op.memberToken && !memberToken) throw new AppError('member_token_required');
    const auth = await deps.credentials.resolve(appId, apiKey, op.memberToken ? memberToken : undefined, req.id);
    req.auth = auth;
    if (op.scope && !auth.scopes.includes(op.scope))
      throw new AppError('insufficient_scope', `This operation needs the ${op.scope} scope.`, {
        required_scope: op.scope,
      });
    const idempotencyKey = op.idempotent ? header(req, 'idempotency-key') : undefined;
    if (idempotencyKey !== undefined && idempotencyKey.length > 255) {
      throw new AppError('validation_error', undefined, {
        fields: [{ field: 'Idempotency-Key', message: 'must be at most 255 characters' }],
      });
    }
    return {
      request_id: req.id,
      tenant_id: auth.tenant_id,
      app_id: auth.app_id,
      sandbox: auth.sandbox,
      scopes: auth.scopes,
      ...(auth.member_id !== undefined ? { member_id: auth.member_id, session_id: auth.session_id } : {}),
      ...(idempotencyKey !== undefined ? { idempotency_key: idempotencyKey } : {}),
    };
  };

  const forward = async (req: FastifyRequest, reply: FastifyReply, op: Operation, meta: unknown) => {
    const input = { ...(req.params as object), ...(req.query as object), ...((req.body as object) ?? {}) };
    const parts = [op.params, op.query, op.body].filter((p) => p !== undefined);
    const fields: { field: string; message: string }[] = [];
    let data: Record<string, unknown> = {};
    for (const part of parts) {
      const r = part.safeParse(input);
      if (r.success) data = { ...data, ...(r.data as object) };
      else fields.push(...r.error.issues.map((i) => ({ field: i.path.join('.') || '(body)', message: i.message })));
    }
    if (req.body !== undefined && (typeof req.body !== 'object' || Array.isArray(req.body) || req.body === null)) {
      fields.push({ field: '(body)', message: 'must be a JSON object' });
    }
    if (fields.length > 0) {
      const names = [...new Set(fields.map((f) => f.field))].join(', ');
      return sendFailure(reply, new AppError('validation_error', `Invalid request: ${names}.`, { fields }));
    }
    const message = await callService(
      nc,
      subjects.op(op.service, op.operation),
      { meta, data },
      req.id,
      config.REQUEST_TIMEOUT_MS,
    );
    return sendReply(reply, message);
  };

  for (const op of Object.values(operations)) {
    knownPaths.set(op.path, new Set([...(knownPaths.get(op.path) ?? []), op.method]));
    app.route({
      method: op.method,
      url: op.path,
      config: { rateLimit: {} },
      preValidation: async (req) => {
        (req as FastifyRequest & { meta?: Meta }).meta = await authenticate(req, op);
      },
      handler: async (req, reply) => forward(req, reply, op, (req as FastifyRequest & { meta?: Meta }).meta),
    });
  }

  const operatorToken = config.OPERATOR_TOKEN ? Buffer.from(config.OPERATOR_TOKEN) : undefined;
  for (const op of Object.values(operatorOperations)) {
    knownPaths.set(op.path, new Set([...(knownPaths.get(op.path) ?? []), op.method]));
    app.route({
      method: op.method,
      url: op.path,
      preValidation: async (req) => {
        const presented = Buffer.from((header(req, 'authorization') ?? '').replace(/^Bearer\s+/i, ''));
        if (!operatorToken || presented.length !== operatorToken.length || !timingSafeEqual(presented, operatorToken)) {
          throw new AppError('invalid_operator_token');
        }
      },
      handler: async (req, reply) => forward(req, reply, op, { request_id: req.id, operator: true }),
    });
  }

  return app;
}

function matchPath(pattern: string, path: string): boolean {
  const a = pattern.split('/');
  const b = path.replace(/\/+$/, '').split('/');
  return a.length === b.length && a.every((seg, i) => seg.startsWith(':') || seg === b[i]);
}
