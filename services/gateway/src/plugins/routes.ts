import { timingSafeEqual } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import {
  AppError,
  buildOperationInput,
  JobResultPart,
  operations,
  operatorOperations,
  staffApiOperations,
  successStatus,
  type Operation,
  type Subjects,
} from '@loyalty/contracts';
import { callService, type Metrics, type NatsConnection, type Span } from '@loyalty/runtime';
import type { Redis } from 'ioredis';
import type { GatewayConfig } from '../config.ts';
import { sendFailure, sendReply } from '../envelope.ts';
import { header } from '../headers.ts';
import { claimIdempotencyKey } from '../idempotency.ts';
import { addRoute, streamUpload } from '../upload.ts';
import { streamPages } from '../paged-download.ts';

export interface RoutesOptions {
  config: Pick<GatewayConfig, 'OPERATOR_TOKEN' | 'REQUEST_TIMEOUT_MS' | 'REDIS_KEY_PREFIX'>;
  nc: NatsConnection;
  subjects: Subjects;
  /** Where a tenant's Idempotency-Keys are bound to the operation they were first used on. */
  redis: Redis;
  /** The NATS round trip of every forwarded request, by owning service and operation. */
  metrics?: Metrics;
}

type Forward = (
  req: FastifyRequest,
  reply: FastifyReply,
  meta: unknown,
  beforeSend?: () => Promise<void>,
) => Promise<FastifyReply>;

/**
 * The routes of the contract tables, one loop each: `/api/v1` operations behind the app
 * credentials and the rate limit, operator operations behind the operator token. Each builds the
 * operation's input from the request, forwards one NATS message to the owning service and wraps
 * its answer in the envelope.
 */
export const contractRoutes = fp<RoutesOptions>(
  async (app, deps) => {
    apiRoutes(app, deps);
    staffRoutes(app, deps);
    operatorRoutes(app, deps);
  },
  {
    name: 'gateway-routes',
    fastify: '5.x',
    dependencies: ['gateway-envelope', 'gateway-credentials', 'gateway-staff-auth', 'gateway-rate-limit'],
    encapsulate: true,
  },
);

/** The handler core of one operation: its input from the request, one NATS call, the answer in the envelope. */
function forwarder(deps: RoutesOptions, op: Operation): Forward {
  const { config, nc, subjects } = deps;
  const fixed = op.route ? undefined : subjects.op(op.service, op.operation);
  return async (req, reply, meta, beforeSend) => {
    // An upload's body is the file's stream (upload.ts), not part of its input.
    const body = op.upload ? undefined : req.body;
    const input = buildOperationInput(op, { params: req.params, query: req.query, body });
    if (!input.ok) {
      const names = [...new Set(input.fields.map((f) => f.field))].join(', ');
      return sendFailure(
        reply,
        new AppError('validation_error', `Invalid request: ${names}.`, { fields: input.fields }),
      );
    }
    // A routed operation's owner is named by its parameters (a job id names its service).
    const owner = op.route?.(input.data) ?? op.service;
    const subject = fixed ?? subjects.op(owner, op.operation);
    if (op.download) return streamDownload(deps, subject, { meta, data: input.data }, req, reply);
    if (op.pagedDownload)
      return streamPages({ nc, timeoutMs: config.REQUEST_TIMEOUT_MS }, subject, { meta, data: input.data }, req, reply);
    if (op.upload) {
      await beforeSend?.();
      const deps2 = { nc, timeoutMs: config.REQUEST_TIMEOUT_MS };
      const upload = { ...op, upload: op.upload };
      return streamUpload(deps2, upload, subject, { meta, data: input.data }, req, reply, successStatus(op));
    }
    await beforeSend?.();
    const started = performance.now();
    const message = await callService(
      nc,
      subject,
      { meta, data: input.data },
      req.id,
      config.REQUEST_TIMEOUT_MS,
      undefined,
      req.span,
    );
    deps.metrics?.observeNatsClient(
      owner,
      op.operation,
      message.ok ? 'ok' : message.error.code,
      (performance.now() - started) / 1000,
    );
    return sendReply(reply, message, successStatus(op));
  };
}

/**
 * A download (a job's result): the owning service answers it part by part (at most 512 KB each);
 * the first part's failure is the answer, later parts are streamed as they arrive, so the gateway
 * holds one part at a time. A part that fails mid-way ends the body short of its Content-Length.
 */
async function streamDownload(
  { config, nc }: RoutesOptions,
  subject: string,
  message: { meta: unknown; data: unknown },
  req: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const data = typeof message.data === 'object' && message.data !== null ? message.data : {};
  const part = async (n: number) => {
    const answer = await callService(
      nc,
      subject,
      { ...message, data: { ...data, part: n } },
      req.id,
      config.REQUEST_TIMEOUT_MS,
      undefined,
      req.span,
    );
    if (!answer.ok) return answer;
    const parsed = JobResultPart.safeParse(answer.data);
    return parsed.success
      ? { ok: true as const, data: parsed.data }
      : { ok: false as const, error: new AppError('internal_error').toBody() };
  };
  const first = await part(0);
  if (!first.ok) return sendFailure(reply, first.error);
  const head = first.data;
  reply
    .code(200)
    .header('content-type', head.content_type)
    .header('content-length', head.size)
    .header('content-disposition', 'attachment');
  if (head.last) return reply.send(Buffer.from(head.data, 'base64'));
  async function* parts(): AsyncGenerator<Buffer> {
    yield Buffer.from(head.data, 'base64');
    for (let n = 1; ; n++) {
      const next = await part(n);
      if (!next.ok) throw new Error(`job result part ${n}: ${next.error.code}`);
      yield Buffer.from(next.data.data, 'base64');
      if (next.data.last) return;
    }
  }
  return reply.send(Readable.from(parts()));
}

/** A valid request carrying a key binds it to this operation (idempotency.ts) before it is sent. */
function idempotencyClaim(
  { config, redis }: RoutesOptions,
  op: Operation,
  meta: { tenant_id: number; idempotency_key?: string },
  span: Span | undefined,
): (() => Promise<void>) | undefined {
  const key = meta.idempotency_key;
  if (key === undefined) return undefined;
  return () =>
    claimIdempotencyKey(
      redis,
      config.REDIS_KEY_PREFIX,
      { tenantId: meta.tenant_id, key, operation: op.operation },
      config.REQUEST_TIMEOUT_MS,
      span,
    );
}

/** The `/api/v1` operations: app credentials, scope, rate limit. */
function apiRoutes(app: FastifyInstance, deps: RoutesOptions): void {
  for (const op of Object.values(operations)) {
    const forward = forwarder(deps, op);
    addRoute(app, op, {
      method: op.method,
      url: op.path,
      config: { rateLimit: {} },
      preValidation: app.authenticate(op),
      handler: async (req, reply) => {
        const meta = req.meta;
        const claim = meta ? idempotencyClaim(deps, op, meta, req.span) : undefined;
        return forward(req, reply, meta, claim);
      },
    });
  }
}

/** The staff API: staff token (except sign-in), role, the tenant's Idempotency-Keys as above. */
function staffRoutes(app: FastifyInstance, deps: RoutesOptions): void {
  for (const op of Object.values(staffApiOperations)) {
    const forward = forwarder(deps, op);
    // An upload (an import file) gets the pass-through body parser, as in the other APIs.
    addRoute(app, op, {
      method: op.method,
      url: op.path,
      ...(op.staffRole ? { preValidation: app.authenticateStaff(op) } : {}),
      handler: async (req, reply) => {
        const meta = req.staffMeta;
        if (!meta) return forward(req, reply, { request_id: req.id });
        return forward(req, reply, meta, idempotencyClaim(deps, op, meta, req.span));
      },
    });
  }
}

/** The operator API, behind the operator token. */
function operatorRoutes(app: FastifyInstance, deps: RoutesOptions): void {
  const checkOperatorToken = operatorTokenCheck(deps.config.OPERATOR_TOKEN);
  for (const op of Object.values(operatorOperations)) {
    const forward = forwarder(deps, op);
    addRoute(app, op, {
      method: op.method,
      url: op.path,
      preValidation: checkOperatorToken,
      handler: async (req, reply) => forward(req, reply, { request_id: req.id, operator: true }),
    });
  }
}

/** The preValidation hook of the operator API: `Authorization: Bearer <OPERATOR_TOKEN>`; unset refuses all. */
function operatorTokenCheck(token: string | undefined) {
  const expected = token ? Buffer.from(token) : undefined;
  return async (req: FastifyRequest) => {
    const presented = Buffer.from((header(req, 'authorization') ?? '').replace(/^Bearer\s+/i, ''));
    if (!expected || presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
      throw new AppError('invalid_operator_token');
    }
  };
}
