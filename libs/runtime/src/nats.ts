import { readFileSync } from 'node:fs';
import { connect, headers as natsHeaders, JSONCodec, type Msg, type NatsConnection, type Service } from 'nats';
import type { z } from 'zod';
import { AppError, REQUEST_ID_HEADER, type ReplyMessage, type ServiceName, Subjects } from '@loyalty/contracts';
import type { Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';
import { natsInboxPrefix } from './nats-auth.ts';

export type { NatsConnection };
const codec = JSONCodec();

/** This process's NATS user (NATS_USER, NATS_PASSWORD) and, for TLS, the CA to trust (NATS_TLS_CA). */
export interface NatsAuth {
  user?: string;
  password?: string;
  tlsCa?: string;
}

/** Connect and keep reconnecting for ever: a NATS restart must not take the service down. */
export async function connectNats(
  url: string,
  name: string,
  log: Logger,
  auth: NatsAuth = {},
): Promise<NatsConnection> {
  const nc = await connect({
    servers: url.split(','),
    name,
    ...(auth.user ? { user: auth.user, pass: auth.password, inboxPrefix: natsInboxPrefix(auth.user) } : {}),
    ...(auth.tlsCa ? { tls: { ca: readFileSync(auth.tlsCa, 'utf8') } } : {}),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    waitOnFirstConnect: true,
    // Without this every request builds an Error with a stack trace in case it fails (~8 % of
    // the gateway's CPU); a failed request is mapped to 503 without needing the trace.
    noAsyncTraces: true,
  });
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'error')
        log.warn({ nats: s.type, data: String(s.data) }, 'nats status');
    }
  })();
  return nc;
}

/** Readiness check of a NATS connection: open, and the server answers a round trip. */
export async function natsReady(nc: NatsConnection): Promise<void> {
  if (nc.isClosed()) throw new Error('closed');
  await nc.flush();
}

/** A reply that also carries the envelope's top-level `message`. */
export class WithMessage<T> {
  constructor(
    readonly data: T,
    readonly message: string,
  ) {}
}

export interface HandlerContext<M> {
  meta: M;
  requestId: string;
  log: Logger;
}

export interface Endpoint<M = unknown> {
  /** Validates `data` again at the service: other services call it too, not only the gateway. */
  schema?: z.ZodType;
  handler: (data: never, ctx: HandlerContext<M>) => Promise<unknown>;
}

/** Helper keeping the handler's data type tied to its schema. */
export function endpoint<S extends z.ZodType, M>(
  schema: S | undefined,
  handler: (data: z.output<S>, ctx: HandlerContext<M>) => Promise<unknown>,
): Endpoint<M> {
  return { schema, handler: handler as Endpoint<M>['handler'] };
}

function validationError(error: z.ZodError): AppError {
  return new AppError('validation_error', undefined, {
    fields: error.issues.map((i) => ({ field: i.path.join('.'), message: i.message })),
  });
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
  endpoints: Record<string, Endpoint<never>>;
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
  for (const [operation, ep] of Object.entries(opts.endpoints)) {
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

export interface ServedEndpoints {
  service: Service;
  /** Stop taking requests and wait until every request in flight has been answered. */
  stop(): Promise<void>;
}

async function handle(
  msg: Msg,
  operation: string,
  ep: Endpoint<never>,
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
    const { meta, data } = codec.decode(msg.data) as { meta: never; data: unknown };
    let input: unknown = data;
    if (ep.schema) {
      const parsed = ep.schema.safeParse(data ?? {});
      if (!parsed.success) throw validationError(parsed.error);
      input = parsed.data;
    }
    ctx.meta = meta;
    const out = await ep.handler(input as never, ctx);
    reply = out instanceof WithMessage ? { ok: true, data: out.data, message: out.message } : { ok: true, data: out };
  } catch (err) {
    if (err instanceof AppError) {
      reply = { ok: false, error: err.toBody() };
    } else if (isUnavailable(err)) {
      // Postgres (or another dependency) is restarting: a retryable 503, not a 500.
      ctx.log.warn({ err: (err as Error).message }, 'dependency unavailable');
      reply = { ok: false, error: new AppError('service_unavailable').toBody() };
    } else {
      ctx.log.error({ err }, 'handler failed');
      reply = { ok: false, error: new AppError('internal_error').toBody() };
    }
  }
  const h = natsHeaders();
  h.set(REQUEST_ID_HEADER, requestId);
  msg.respond(codec.encode(reply), { headers: h });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  opts.metrics?.observeNats(operation, reply.ok ? 'ok' : reply.error.code, seconds);
  if (opts.log.isLevelEnabled('debug')) ctx.log.debug({ ok: reply.ok, ms: Math.round(seconds * 1000) }, 'handled');
}

/**
 * Send one request/reply message and return the decoded reply. A timeout or "no responders"
 * becomes a `service_unavailable` failure reply, never an exception the caller must map.
 */
export async function callService<T = unknown>(
  nc: NatsConnection,
  subject: string,
  message: { meta: unknown; data: unknown },
  requestId: string,
  timeoutMs: number,
): Promise<ReplyMessage<T>> {
  const h = natsHeaders();
  h.set(REQUEST_ID_HEADER, requestId);
  try {
    const reply = await nc.request(subject, codec.encode(message), { timeout: timeoutMs, headers: h });
    return codec.decode(reply.data) as ReplyMessage<T>;
  } catch {
    return { ok: false, error: new AppError('service_unavailable').toBody() };
  }
}

/** Errors that mean "a dependency is down for now", as opposed to a bug: answered with 503. */
export function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (
    typeof e?.code === 'string' &&
    (/^(08|57P0)/.test(e.code) || ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND'].includes(e.code))
  )
    return true;
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|the database system is (starting up|shutting down)/i.test(
    e?.message ?? '',
  );
}

/**
 * Call another service's operation and return its data; a failure reply is thrown as the same
 * AppError (code, message and details), so it travels on to the HTTP client unchanged.
 */
export async function invoke<T>(
  nc: NatsConnection,
  subject: string,
  meta: { request_id: string } & Record<string, unknown>,
  data: unknown,
  timeoutMs = 5_000,
): Promise<T> {
  const reply = await callService<T>(nc, subject, { meta, data }, meta.request_id, timeoutMs);
  if (reply.ok) return reply.data;
  const { code, message, ...details } = reply.error;
  throw new AppError(code, message, details);
}

export { codec as jsonCodec };
