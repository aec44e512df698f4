import { headers as natsHeaders, type Msg, type NatsConnection } from 'nats';
import {
  inChildSpan,
  inSpan,
  recordingSpan,
  SpanKind,
  TRACEPARENT,
  traceparentOf,
  traceparentOfSpan,
  tracingOn,
  type Span,
} from './tracing.ts';
import type { z } from 'zod';
import {
  AppError,
  DOWNLOAD_PAGE_HEADER,
  DownloadPage,
  REQUEST_ID_HEADER,
  type ErrorBody,
  type InternalOperation,
  type ReplyMessage,
  type ServiceMeta,
  type Subjects,
} from '@loyalty/contracts';
import { inTransaction } from './open-transaction.ts';
import type { Logger } from './logger.ts';
import { jsonCodec } from './nats.ts';

/** The owning service did not answer in time, or no replica of it is there: retryable (503). */
export class ServiceUnavailableError extends AppError {
  constructor(readonly subject: string) {
    super('service_unavailable');
    this.name = 'ServiceUnavailableError';
  }
}

/**
 * A reply that cannot be decoded, or that does not fit the operation's contract: a bug in one of
 * the two services, never the client's fault (500, logged with the subject).
 */
export class ContractViolationError extends AppError {
  constructor(
    readonly subject: string,
    readonly reason: string,
  ) {
    super('internal_error');
    this.name = 'ContractViolationError';
  }
}

/**
 * Send one request (traced inside a traced operation); the reply as it came, or
 * ServiceUnavailableError. `via`: the caller's span, passed by hand (the gateway's request span:
 * it enters no async context), instead of the active one.
 */
async function send(
  nc: NatsConnection,
  subject: string,
  message: { meta: unknown; data: unknown },
  requestId: string,
  timeoutMs: number,
  via?: Span,
): Promise<Msg> {
  const h = natsHeaders();
  h.set(REQUEST_ID_HEADER, requestId);
  const once = async (traceparent: string | undefined): Promise<Msg> => {
    if (traceparent) h.set(TRACEPARENT, traceparent);
    try {
      return await nc.request(subject, jsonCodec.encode(message), { timeout: timeoutMs, headers: h });
    } catch {
      throw new ServiceUnavailableError(subject);
    }
  };
  const name = `nats request ${subject}`;
  const opts = {
    kind: SpanKind.CLIENT,
    attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject },
  };
  // A trace the sampler left out is passed on as such (the owner's sampler follows its parent).
  if (via) return inChildSpan(via, name, opts, (span) => once(traceparentOfSpan(span ?? via)));
  // A span only inside a traced operation (a request's own look-ups made outside one are not traced).
  return tracingOn() && recordingSpan() ? inSpan(name, opts, () => once(traceparentOf())) : once(traceparentOf());
}

/** A reply's payload as a reply message; ContractViolationError (logged) when it is none. */
function decodeReply<T>(raw: Uint8Array, subject: string, requestId: string, log: Logger | undefined): ReplyMessage<T> {
  let reply: unknown;
  try {
    reply = jsonCodec.decode(raw);
  } catch {
    reply = undefined;
  }
  if (isReplyMessage<T>(reply)) return reply;
  log?.error({ subject, request_id: requestId }, 'undecodable reply');
  throw new ContractViolationError(subject, 'undecodable reply');
}

/**
 * One request/reply message: the decoded reply, or a typed failure — `ServiceUnavailableError`
 * for a timeout or no responders, `ContractViolationError` for a reply that is no reply message
 * (logged with the subject).
 */
async function request<T>(
  nc: NatsConnection,
  subject: string,
  message: { meta: unknown; data: unknown },
  requestId: string,
  timeoutMs: number,
  log: Logger | undefined,
  via?: Span,
): Promise<ReplyMessage<T>> {
  const msg = await send(nc, subject, message, requestId, timeoutMs, via);
  return decodeReply<T>(msg.data, subject, requestId, log);
}

/**
 * One page of a paged download: its description (`DownloadPage`, from the reply's
 * DOWNLOAD_PAGE_HEADER) and its bytes (the reply's payload, not copied), or the failure reply the
 * owning service answered (or service_unavailable / internal_error, as {@link callService}).
 */
export async function callPage(
  nc: NatsConnection,
  subject: string,
  message: { meta: unknown; data: unknown },
  requestId: string,
  timeoutMs: number,
  log?: Logger,
  via?: Span,
): Promise<{ ok: true; page: z.output<typeof DownloadPage>; body: Uint8Array } | { ok: false; error: ErrorBody }> {
  try {
    const msg = await send(nc, subject, message, requestId, timeoutMs, via);
    const described = msg.headers?.get(DOWNLOAD_PAGE_HEADER);
    if (!described) {
      const reply = decodeReply(msg.data, subject, requestId, log);
      if (!reply.ok) return reply;
      throw new ContractViolationError(subject, 'a page without its description');
    }
    const page = DownloadPage.safeParse(parseJson(described));
    if (!page.success) throw new ContractViolationError(subject, 'a page description that breaks its contract');
    return { ok: true, page: page.data, body: msg.data };
  } catch (err) {
    return { ok: false, error: (err instanceof AppError ? err : new AppError('internal_error')).toBody() };
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Whether a decoded reply has the shape of a reply message: `ok: true` (its data is the caller's to
 * check against the contract), or `ok: false` with an error code.
 */
function isReplyMessage<T>(v: unknown): v is ReplyMessage<T> {
  if (typeof v !== 'object' || v === null || !('ok' in v)) return false;
  if (v.ok === true) return true;
  return (
    v.ok === false &&
    'error' in v &&
    typeof v.error === 'object' &&
    v.error !== null &&
    'code' in v.error &&
    typeof v.error.code === 'string' &&
    v.error.code.length > 0
  );
}

/**
 * Send one request/reply message and return the decoded reply (the gateway forwards it as it is).
 * A timeout or "no responders" becomes a `service_unavailable` failure reply, an undecodable
 * reply an `internal_error` one (logged with the subject), never an exception the caller must map.
 * `via`: the caller's span, passed by hand (the gateway's request span) rather than the active one.
 */
export async function callService<T = unknown>(
  nc: NatsConnection,
  subject: string,
  message: { meta: unknown; data: unknown },
  requestId: string,
  timeoutMs: number,
  log?: Logger,
  via?: Span,
): Promise<ReplyMessage<T>> {
  try {
    return await request<T>(nc, subject, message, requestId, timeoutMs, log, via);
  } catch (err) {
    return { ok: false, error: (err instanceof AppError ? err : new AppError('internal_error')).toBody() };
  }
}

/** The meta an operation's request carries: its own schema's, else a tenant's `ServiceMeta`. */
export type MetaOf<O extends InternalOperation> = O extends { meta: infer M extends z.ZodType }
  ? z.input<M> & { request_id: string }
  : ServiceMeta;

/**
 * Calls other services' operations, typed by their contracts: the request is what the operation's
 * request schema takes, the answer what its reply schema gives (checked: a reply that does not
 * fit is a `ContractViolationError`). A failure reply is thrown as the same AppError (code,
 * message and details), so it travels on to the HTTP client unchanged; a timeout or a missing
 * service is a `ServiceUnavailableError`.
 *
 * It refuses to call while the caller holds a database transaction open: a slow or missing peer
 * would hold a connection and row locks for the length of the timeout. Commit, call, commit.
 */
export class ServiceClient {
  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects,
    private readonly opts: { timeoutMs: number; log: Logger },
  ) {}

  async call<Rep extends z.ZodType, O extends InternalOperation<z.ZodType, Rep>>(
    op: O & { reply: Rep },
    meta: MetaOf<O>,
    data: z.input<O['request']>,
  ): Promise<z.output<Rep>> {
    const subject = this.subjects.op(op.service, op.operation);
    if (inTransaction()) throw new Error(`${subject} called while a database transaction is open`);
    const reply = await request(this.nc, subject, { meta, data }, meta.request_id, this.opts.timeoutMs, this.opts.log);
    if (!reply.ok) {
      const { code, message, ...details } = reply.error;
      throw new AppError(code, message, details);
    }
    const parsed = op.reply.safeParse(reply.data);
    if (!parsed.success) {
      this.opts.log.error(
        { subject, request_id: meta.request_id, issues: parsed.error.issues },
        'reply breaks its contract',
      );
      throw new ContractViolationError(subject, 'reply breaks its contract');
    }
    return parsed.data;
  }
}
