import { headers as natsHeaders, type Msg, type NatsConnection, type Service } from 'nats';
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
import type { Logger } from './logger.ts';
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

export interface HandlerContext<M> {
  meta: M;
  requestId: string;
  log: Logger;
}

/** What a handler of an operation answers: its response data, with a top-level message where the contract has one. */
type Answer<T> = Promise<T | WithMessage<T>>;

/** One served subject: the schemas its message is checked against, and the handler. */
export interface Endpoint {
  /** Who may call: the request's `meta` is validated like any other input. */
  meta: z.ZodType;
  /** Validates `data` again at the service: other services call it too, not only the gateway. */
  input: z.ZodType | undefined;
  handler: (data: never, ctx: HandlerContext<never>) => Promise<unknown>;
}

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
    return this.add(op, Meta, operationInput(op), handler);
  }

  /** An operation of the operator table (`/admin/v1`): no tenant in the meta, the path names it. */
  operator<O extends Operation>(
    op: O,
    handler: (input: OperationInput<O>, ctx: HandlerContext<AdminMeta>) => Answer<OperationOutput<O>>,
  ): this {
    return this.add(op, AdminMeta, operationInput(op), handler);
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
    return this.add(op, StaffMeta, operationInput(op), async (input, ctx: HandlerContext<StaffMeta>) => {
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
    return this.add(op, StaffSignInMeta, operationInput(op), handler);
  }

  /** An operation other services (or the gateway) call over NATS. */
  internal<O extends InternalOperation>(
    op: O,
    handler: (input: z.output<O['request']>, ctx: HandlerContext<ServiceMeta>) => Promise<z.output<O['reply']>>,
  ): this {
    const request = op.request as z.ZodType<z.output<O['request']>>;
    return this.add(op, (op.meta ?? ServiceMeta) as z.ZodType<ServiceMeta>, request, handler);
  }

  /** A subject of this service that no contract describes (e.g. `system.ping`). */
  plain(operation: string, handler: () => Promise<unknown>): this {
    this.table[operation] = { meta: ServiceMeta.partial(), input: undefined, handler };
    return this;
  }

  private add<I, M>(
    op: { service: ServiceName; operation: string },
    meta: z.ZodType<M>,
    input: z.ZodType<I>,
    handler: (input: I, ctx: HandlerContext<M>) => Promise<unknown>,
  ): this {
    if (op.service !== this.service) throw new Error(`${op.operation} belongs to ${op.service}, not ${this.service}`);
    if (this.table[op.operation]) throw new Error(`${op.operation} is registered twice`);
    this.table[op.operation] = { meta, input, handler: handler as Endpoint['handler'] };
    return this;
  }
}

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
  const inFlight = { count: 0, idle: [] as (() => void)[] };
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
    meta: undefined as never,
    requestId,
    get log(): Logger {
      return (child ??= opts.log.child({ request_id: requestId, operation }));
    },
  };
  let reply: ReplyMessage;
  try {
    const message = decodeRequest(msg);
    const meta = ep.meta.safeParse(message.meta);
    if (!meta.success) throw validationError(meta.error, 'meta.');
    let input: unknown = message.data;
    if (ep.input) {
      const parsed = ep.input.safeParse(message.data ?? {});
      if (!parsed.success) throw validationError(parsed.error);
      input = parsed.data;
    }
    ctx.meta = meta.data as never;
    const out = await ep.handler(input as never, ctx);
    reply =
      out instanceof WithMessage
        ? { ok: true, data: out.data, message: out.message, ...(out.replayed ? { replayed: true } : {}) }
        : { ok: true, data: out, ...(isReplay(out) ? { replayed: true } : {}) };
  } catch (err) {
    reply = { ok: false, error: failureOf(err, ctx.log) };
  }
  const h = natsHeaders();
  h.set(REQUEST_ID_HEADER, requestId);
  msg.respond(jsonCodec.encode(reply), { headers: h });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  opts.metrics?.observeNats(operation, reply.ok ? 'ok' : reply.error.code, seconds);
  if (opts.log.isLevelEnabled('debug')) ctx.log.debug({ ok: reply.ok, ms: Math.round(seconds * 1000) }, 'handled');
}

function decodeRequest(msg: Msg): { meta: unknown; data: unknown } {
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
  const { meta, data } = decoded as { meta?: unknown; data?: unknown };
  return { meta, data };
}

/** The failure reply of a thrown error: catalogue errors as they are, a lost database as 503, anything else 500. */
function failureOf(err: unknown, log: Logger): ReturnType<AppError['toBody']> {
  if (err instanceof AppError) return err.toBody();
  if (isConnectionLost(err)) {
    // Postgres (or another dependency) is restarting: a retryable 503, not a 500.
    log.warn({ err: (err as Error).message }, 'dependency unavailable');
    return new AppError('service_unavailable').toBody();
  }
  log.error({ err }, 'handler failed');
  return new AppError('internal_error').toBody();
}
