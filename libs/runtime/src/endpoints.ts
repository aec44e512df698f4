import { headers as natsHeaders, type Msg, type NatsConnection, type Service } from 'nats';
import { contextOf, inSpan, SpanKind, TRACEPARENT, tracingOn } from './tracing.ts';
import type { z } from 'zod';
import {
  AdminMeta,
  AppError,
  Meta,
  operationInput,
  REQUEST_ID_HEADER,
  ServiceMeta,
  StaffMeta,
  StaffSignInMeta,
  type InternalOperation,
  type Operation,
  type OperationInput,
  type OperationOutput,
  type ReplyMessage,
  type ServiceName,
  type Subjects,
} from '@loyalty/contracts';
import { isConnectionLost } from './db.ts';
import { isReplay } from './idempotency.ts';
import { errorMessage, type Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';
import { jsonCodec } from './nats.ts';

/** A reply that also carries the envelope's top-level `message`. */
export class WithMessage<T> {
  constructor(
    readonly data: T,
    readonly message: string,
    /** A stored response replayed under its Idempotency-Key. */
    readonly replayed = false,
  ) {}
}

/**
 * A reply whose payload is bytes as they are, described by a JSON header (a page of a paged
 * download: `DownloadPage` in DOWNLOAD_PAGE_HEADER): no JSON envelope, no base64.
 */
export class RawReply {
  constructor(
    readonly header: string,
    readonly described: unknown,
    readonly body: Uint8Array,
  ) {}
}

export interface HandlerContext<M> {
  meta: M;
  requestId: string;
  log: Logger;
}

/** What a handler of an operation answers: its response data, with a top-level message where the contract has one. */
type Answer<T> = Promise<T | WithMessage<T>>;

/** What a request message carries, before it is checked. */
export interface RequestMessage {
  meta: unknown;
  data: unknown;
}

/**
 * One served subject: checks the message's `meta` (who may call) and `data` (validated again at the
 * service: other services call it too, not only the gateway) against the operation's schemas, then
 * runs the handler with what they answered.
 */
export interface Endpoint {
  run(message: RequestMessage, ctx: { requestId: string; log: Logger }): Promise<unknown>;
}

/** A schema's check, as a function (the schema's output type kept). */
type Check<T> = (value: unknown) => z.ZodSafeParseResult<T>;
const check =
  <T>(schema: z.ZodType<T>): Check<T> =>
  (value) =>
    schema.safeParse(value);

/**
 * The subject -> handler table of one service. A handler registered for an operation of the
 * contracts gets its input type from the operation's schemas and must answer its response type,
 * so the table needs no casts; the schemas also validate every message at run time.
 */
export class Endpoints {
  readonly table: Record<string, Endpoint> = {};

  constructor(readonly service: ServiceName) {}

  /** An operation of the public contract table (`/api/v1`), called by the gateway. */
  public<O extends Operation>(
    op: O,
    handler: (input: OperationInput<O>, ctx: HandlerContext<Meta>) => Answer<OperationOutput<O>>,
  ): this {
    return this.add(op, check(Meta), check(operationInput(op)), handler);
  }

  /** An operation of the operator table (`/admin/v1`): no tenant in the meta, the path names it. */
  operator<O extends Operation>(
    op: O,
    handler: (input: OperationInput<O>, ctx: HandlerContext<AdminMeta>) => Answer<OperationOutput<O>>,
  ): this {
    return this.add(op, check(AdminMeta), check(operationInput(op)), handler);
  }

  /**
   * An operation of the staff table (`/staff/v1`) that needs a staff token: the meta names the
   * staff user (the actor of what the handler changes). The role is checked here again (the
   * gateway checks it first): a manager-only operation refuses a `staff` meta.
   */
  staff<O extends Operation>(
    op: O,
    handler: (input: OperationInput<O>, ctx: HandlerContext<StaffMeta>) => Answer<OperationOutput<O>>,
  ): this {
    if (!op.staffRole) throw new Error(`${op.operation} is a sign-in operation; register it with staffSignIn`);
    const role = op.staffRole;
    return this.add(op, check(StaffMeta), check(operationInput(op)), async (input, ctx: HandlerContext<StaffMeta>) => {
      if (role === 'manager' && ctx.meta.staff.role !== 'manager') throw new AppError('insufficient_role');
      return handler(input, ctx);
    });
  }

  /** A staff sign-in operation: no staff token yet (the body names the tenant). */
  staffSignIn<O extends Operation>(
    op: O,
    handler: (input: OperationInput<O>, ctx: HandlerContext<StaffSignInMeta>) => Answer<OperationOutput<O>>,
  ): this {
    if (op.staffRole) throw new Error(`${op.operation} needs a staff token; register it with staff`);
    return this.add(op, check(StaffSignInMeta), check(operationInput(op)), handler);
  }

  /** An operation other services call over NATS for a tenant (its meta is a `ServiceMeta`). */
  internal<Req extends z.ZodType, Rep extends z.ZodType>(
    op: InternalOperation<Req, Rep> & { meta?: undefined },
    handler: (input: z.output<Req>, ctx: HandlerContext<ServiceMeta>) => Promise<z.output<Rep>>,
  ): this {
    return this.add(
      op,
      (v) => ServiceMeta.safeParse(v),
      (v) => op.request.safeParse(v),
      handler,
    );
  }

  /**
   * An operation the gateway calls before it knows the tenant (authentication): the message's
   * meta is checked against the operation's own meta schema; the handler has the request id.
   */
  gatewayInternal<Req extends z.ZodType, Rep extends z.ZodType>(
    op: InternalOperation<Req, Rep> & { meta: z.ZodType },
    handler: (input: z.output<Req>, ctx: HandlerContext<unknown>) => Promise<z.output<Rep>>,
  ): this {
    return this.add(
      op,
      (v) => op.meta.safeParse(v),
      (v) => op.request.safeParse(v),
      handler,
    );
  }

  /**
   * An operation whose owner a path parameter names (`route` in the contract: a job id names the
   * service running the job): every service that may own one serves it under its own subjects.
   */
  routed<M, I>(
    operation: string,
    meta: z.ZodType<M>,
    input: z.ZodType<I>,
    handler: (input: I, ctx: HandlerContext<M>) => Promise<unknown>,
  ): this {
    return this.add({ service: this.service, operation }, check(meta), check(input), handler);
  }

  /** A subject of this service that no contract describes (e.g. `system.ping`). */
  plain(operation: string, handler: () => Promise<unknown>): this {
    const meta = ServiceMeta.partial();
    return this.add({ service: this.service, operation }, (v) => meta.safeParse(v), anything, handler);
  }

  private add<I, M>(
    op: { service: ServiceName; operation: string },
    meta: Check<M>,
    input: Check<I>,
    handler: (input: I, ctx: HandlerContext<M>) => Promise<unknown>,
  ): this {
    if (op.service !== this.service) throw new Error(`${op.operation} belongs to ${op.service}, not ${this.service}`);
    if (this.table[op.operation]) throw new Error(`${op.operation} is registered twice`);
    this.table[op.operation] = {
      async run(message, ctx) {
        const checkedMeta = meta(message.meta);
        if (!checkedMeta.success) throw validationError(checkedMeta.error, 'meta.');
        const checkedInput = input(message.data ?? {});
        if (!checkedInput.success) throw validationError(checkedInput.error);
        return handler(checkedInput.data, {
          meta: checkedMeta.data,
          requestId: ctx.requestId,
          get log() {
            return ctx.log;
          },
        });
      },
    };
    return this;
  }
}

/** The check of a subject no contract describes: whatever data it carries (its handler reads none). */
const anything: Check<unknown> = (value) => ({ success: true, data: value });

function validationError(error: z.ZodError, prefix = ''): AppError {
  return new AppError('validation_error', undefined, {
    fields: error.issues.map((i) => ({ field: prefix + i.path.join('.'), message: i.message })),
  });
}

/** The endpoint every service answers so callers (and tests) can tell it is there. */
export function pingEndpoint(name: string, version: string): () => Promise<unknown> {
  return async () => ({ service: name, version, status: 'ok' });
}

export interface ServedEndpoints {
  service: Service;
  /** Stop taking requests and wait until every request in flight has been answered. */
  stop(): Promise<void>;
}

/**
 * Serve a table of `operation -> endpoint` as a NATS micro service: one queue group per
 * service (replicas share the load), `$SRV` discovery and stats for free.
 */
export async function serveEndpoints(opts: {
  nc: NatsConnection;
  subjects: Subjects;
  service: ServiceName;
  version: string;
  endpoints: Endpoints;
  log: Logger;
  metrics?: Metrics;
}): Promise<ServedEndpoints> {
  const inFlight: { count: number; idle: (() => void)[] } = { count: 0, idle: [] };
  const srv = await opts.nc.services.add({
    name: `${opts.subjects.root}-${opts.service}`,
    version: opts.version,
    description: `loyalty ${opts.service} service`,
    queue: `${opts.subjects.root}-${opts.service}`,
  });
  for (const [operation, ep] of Object.entries(opts.endpoints.table)) {
    const subject = opts.subjects.op(opts.service, operation);
    srv.addEndpoint(operation.replace(/[^A-Za-z0-9_-]/g, '_'), {
      subject,
      handler: (err, msg) => {
        if (err) {
          opts.log.error({ err: err.message, subject }, 'endpoint subscription failed');
          return;
        }
        inFlight.count++;
        void handle(msg, operation, ep, opts).finally(() => {
          if (--inFlight.count === 0) inFlight.idle.splice(0).forEach((wake) => wake());
        });
      },
    });
  }
  // The subscriptions exist at the server before this replica counts as serving.
  await opts.nc.flush();
  return {
    service: srv,
    async stop() {
      await srv.stop(); // unsubscribe: no new requests reach this replica
      if (inFlight.count > 0) await new Promise<void>((resolve) => inFlight.idle.push(resolve));
    },
  };
}

async function handle(
  msg: Msg,
  operation: string,
  ep: Endpoint,
  opts: { log: Logger; metrics?: Metrics },
): Promise<void> {
  const started = process.hrtime.bigint();
  const requestId = msg.headers?.get(REQUEST_ID_HEADER) || 'none';
  // The request's logger is made only when something is logged: most requests log nothing.
  let child: Logger | undefined;
  const ctx = {
    requestId,
    get log(): Logger {
      return (child ??= opts.log.child({ request_id: requestId, operation }));
    },
  };
  let reply: ReplyMessage;
  const h = natsHeaders();
  h.set(REQUEST_ID_HEADER, requestId);
  try {
    const out = tracingOn()
      ? await inSpan(
          `handle ${operation}`,
          {
            kind: SpanKind.SERVER,
            parent: contextOf(msg.headers?.get(TRACEPARENT)),
            attributes: { 'messaging.system': 'nats', 'messaging.destination.name': msg.subject },
          },
          () => ep.run(decodeRequest(msg), ctx),
        )
      : await ep.run(decodeRequest(msg), ctx);
    if (out instanceof RawReply) {
      h.set(out.header, JSON.stringify(out.described));
      msg.respond(out.body, { headers: h });
      opts.metrics?.observeNats(operation, 'ok', Number(process.hrtime.bigint() - started) / 1e9);
      return;
    }
    reply =
      out instanceof WithMessage
        ? { ok: true, data: out.data, message: out.message, ...(out.replayed ? { replayed: true } : {}) }
        : { ok: true, data: out, ...(isReplay(out) ? { replayed: true } : {}) };
  } catch (err) {
    reply = { ok: false, error: failureOf(err, ctx.log) };
  }
  msg.respond(jsonCodec.encode(reply), { headers: h });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  opts.metrics?.observeNats(operation, reply.ok ? 'ok' : reply.error.code, seconds);
  if (opts.log.isLevelEnabled('debug')) ctx.log.debug({ ok: reply.ok, ms: Math.round(seconds * 1000) }, 'handled');
}

function decodeRequest(msg: Msg): RequestMessage {
  let decoded: unknown;
  try {
    decoded = jsonCodec.decode(msg.data);
  } catch {
    throw new AppError('validation_error', 'The message is not valid JSON.', {
      fields: [{ field: '(message)', message: 'must be JSON' }],
    });
  }
  if (!decoded || typeof decoded !== 'object' || Array.isArray(decoded)) {
    throw new AppError('validation_error', 'The message must be an object with meta and data.', {
      fields: [{ field: '(message)', message: 'must be an object' }],
    });
  }
  return { meta: 'meta' in decoded ? decoded.meta : undefined, data: 'data' in decoded ? decoded.data : undefined };
}

/** The failure reply of a thrown error: catalogue errors as they are, a lost database as 503, anything else 500. */
function failureOf(err: unknown, log: Logger): ReturnType<AppError['toBody']> {
  if (err instanceof AppError) return err.toBody();
  if (isConnectionLost(err)) {
    // Postgres (or another dependency) is restarting: a retryable 503, not a 500.
    log.warn({ err: errorMessage(err) }, 'dependency unavailable');
    return new AppError('service_unavailable').toBody();
  }
  log.error({ err }, 'handler failed');
  return new AppError('internal_error').toBody();
}
