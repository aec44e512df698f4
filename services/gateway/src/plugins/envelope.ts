import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import {
  AppError,
  type ErrorCode,
  errorCatalogue,
  MAX_INPUT_DEPTH,
  nestsDeeperThan,
  type Operation,
  tooDeepIssue,
} from '@loyalty/contracts';
import {
  contextOf,
  failSpan,
  SpanKind,
  startSpan,
  traceparentOfSpan,
  tracingOn,
  type Metrics,
  type Span,
} from '@loyalty/runtime';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's span, when tracing is on (ended when the answer has gone). */
    span?: Span;
  }
}
import { sendFailure } from '../envelope.ts';

export interface EnvelopeOptions {
  metrics: Metrics;
  /** The routes of the API, to tell an unsupported method (405) from an unknown route (404). */
  routes: Iterable<Pick<Operation, 'method' | 'path'>>;
  /** How much of a too large body is read (and discarded) before the 413 is sent. */
  drainLimitBytes: number;
}

/** The APIs' paths (merchant, operator and staff API), not the docs or health endpoints. */
const API_PATH = /^\/(api|admin|staff)\/v1(\/|\?|$)/;

/**
 * Every answer in the envelope: the error handler and the not-found/405 handler map failures to
 * `{ success: false, error }`, the JSON parser turns a bad body into `invalid_json`. Also the
 * request id header and the HTTP metrics (duration of every request, count of every failure).
 * Failures Fastify and Node answer before a route runs are in {@link frameworkErrors} and
 * {@link clientErrorHandler}, given to Fastify's constructor.
 */
export const envelope = fp<EnvelopeOptions>(
  async (app, { metrics, routes, drainLimitBytes }) => {
    app.addHook('onRequest', async (req, reply) => {
      reply.header('X-Request-Id', req.id);
      if (tracingOn()) traceRequest(req, reply);
    });
    app.addHook('onResponse', async (req, reply) => {
      const route = req.routeOptions.url ?? 'unmatched';
      metrics.httpDuration.observe(
        { method: req.method, route, status: String(reply.statusCode) },
        reply.elapsedTime / 1000,
      );
      if (req.span) {
        req.span.updateName(`${req.method} ${route}`);
        req.span.setAttributes({ 'http.route': route, 'http.response.status_code': reply.statusCode });
        if (reply.statusCode >= 500) failSpan(req.span, `HTTP ${reply.statusCode}`);
        req.span.end();
      }
    });
    app.addHook('onSend', async (req, reply, payload) => {
      // Member data, balances, one-time codes and tokens: no cache (browser, proxy) may keep an
      // API answer, failures included.
      if (API_PATH.test(req.url)) reply.header('Cache-Control', 'no-store');
      if (reply.statusCode >= 400 && typeof payload === 'string' && payload.startsWith('{"success":false')) {
        const code = /"code":"([a-z_]+)"/.exec(payload)?.[1] ?? 'unknown';
        metrics.httpErrors.inc({ route: req.routeOptions.url ?? 'unmatched', code });
      }
      return payload;
    });
    addJsonParser(app);
    app.setErrorHandler(errorMapper(drainLimitBytes));
    app.setNotFoundHandler(notFound(routes));
  },
  { name: 'gateway-envelope', fastify: '5.x' },
);

/**
 * The request's span (a child of the caller's `traceparent`, if it sent one); the answer says which
 * trace it is in (`traceparent` response header), and the request's log lines name it.
 */
function traceRequest(req: FastifyRequest, reply: FastifyReply): void {
  const incoming = req.headers.traceparent;
  const span = startSpan(`${req.method}`, {
    kind: SpanKind.SERVER,
    parent: contextOf(typeof incoming === 'string' ? incoming : undefined),
    attributes: { 'http.request.method': req.method, 'url.path': req.url.split('?', 1)[0] ?? '/' },
  });
  if (!span) return;
  req.span = span;
  reply.header('traceparent', traceparentOfSpan(span));
  // The request's log lines name a sampled trace (a trace left out is nowhere to look up).
  if (span.isRecording()) {
    const { traceId, spanId } = span.spanContext();
    req.log = req.log.child({ trace_id: traceId, span_id: spanId });
  }
}

/**
 * An empty body on a POST is an empty object, not a parse error. A body nesting deeper than any
 * operation needs is refused here, before validation or logging walk it recursively. JSON is the
 * only body the routes read: Fastify's own text/plain parser is removed, so text/plain is refused
 * as any other type is (415 unsupported_media_type) instead of reaching validation as a string.
 * Routes that take another type add their own parser (uploads, the unsubscribe link).
 */
function addJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, {});
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return done(new AppError('invalid_json'), undefined);
    }
    if (nestsDeeperThan(parsed, MAX_INPUT_DEPTH))
      return done(new AppError('validation_error', 'Invalid request: (body).', { fields: [tooDeepIssue] }), undefined);
    done(null, parsed);
  });
}

function errorMapper(drainLimitBytes: number) {
  return async (err: Error & { statusCode?: number; code?: string }, req: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof AppError) return sendFailure(reply, err);
    if (err.statusCode === 429)
      return sendFailure(
        reply,
        new AppError('rate_limited', undefined, { retry_after_seconds: Number(reply.getHeader('retry-after') ?? 1) }),
      );
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      // Answering with Connection: close while the client is still sending makes Node close the
      // socket under it: most clients (fetch among them) then see a reset instead of the 413.
      if (req.headers['content-length'] !== undefined) {
        // Declared over the limit (Fastify refuses it before reading a byte): answered at once,
        // without waiting for a body that may never come. The connection stays open while the rest
        // is read after the answer (up to a bound), so the client can read it; a body not read to
        // its end within the bound closes the connection.
        reply.removeHeader('connection');
        void drain(req.raw, drainLimitBytes).then(() => {
          if (!req.raw.complete) req.raw.socket.destroy();
        });
        return sendFailure(reply, new AppError('payload_too_large'));
      }
      // Found over the limit while read (a chunked body): the rest is read first (up to a bound),
      // then answered, and the connection is closed after it.
      await drain(req.raw, drainLimitBytes);
      reply.header('Connection', 'close');
      return sendFailure(reply, new AppError('payload_too_large'));
    }
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
      return sendFailure(reply, new AppError('unsupported_media_type'));
    if (err.code?.startsWith('FST_ERR_CTP') || err.statusCode === 400)
      return sendFailure(reply, new AppError('invalid_json'));
    req.log.error({ err }, 'unhandled gateway error');
    return sendFailure(reply, new AppError('internal_error'));
  };
}

/**
 * The error handler of a scope serving static files (the console, Swagger UI's assets): a path the
 * file sender refuses, one that climbs out of the directory (`..`, encoded or not), holds a NUL
 * byte or names an absolute path (its 403 or 400), answers as a file that does not exist does
 * (404 `route_not_found`), where the envelope's handler would have made an unknown error a 500.
 * Anything else goes on to that handler.
 */
export function staticFileErrors(
  err: Error & { statusCode?: number; status?: number },
  _req: FastifyRequest,
  reply: FastifyReply,
): void {
  const status = err.statusCode ?? err.status;
  if (typeof status === 'number' && status >= 400 && status < 500) return reply.callNotFound();
  throw err;
}

/** Reads and discards what is left of a request body: until its end, `limit` bytes, an error or 10 s. */
function drain(stream: IncomingMessage, limit: number): Promise<void> {
  if (stream.complete || stream.readableEnded || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let seen = 0;
    const finish = () => {
      clearTimeout(timer);
      stream.off('data', onData);
      stream.off('end', finish);
      stream.off('error', finish);
      stream.off('close', finish);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > limit) finish();
    };
    const timer = setTimeout(finish, 10_000);
    stream.on('data', onData);
    stream.on('end', finish);
    stream.on('error', finish);
    stream.on('close', finish);
    stream.resume();
  });
}

/**
 * Fastify's router failures before any route runs (Fastify's `frameworkErrors`): a path parameter
 * over the length limit and a path that does not decode, in the envelope instead of Fastify's own body.
 */
export function frameworkErrors(err: Error & { code?: string }, req: FastifyRequest, reply: FastifyReply): void {
  // These answers skip the hooks (onRequest's X-Request-Id and onSend's Cache-Control among them).
  reply.header('X-Request-Id', req.id);
  if (API_PATH.test(req.url)) reply.header('Cache-Control', 'no-store');
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') sendFailure(reply, new AppError('uri_too_long'));
  else if (err.code === 'FST_ERR_BAD_URL')
    sendFailure(reply, new AppError('malformed_request', 'The request path is not a valid URL.'));
  else sendFailure(reply, new AppError('malformed_request'));
}

/**
 * Requests Node's HTTP parser refuses (Fastify's `clientErrorHandler`, Node's `clientError`): no
 * route runs, so the envelope is written on the socket by hand, then the connection is closed.
 * The answer has a fresh `X-Request-Id` like every other (a request the parser refused has no
 * header anyone can trust to keep).
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const code = clientErrorCode(err.code);
  const status = errorCatalogue[code].status;
  const body = JSON.stringify({ success: false, error: { code, message: errorCatalogue[code].message } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nX-Request-Id: ${randomUUID()}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

function clientErrorCode(code: string | undefined): ErrorCode {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return 'headers_too_large';
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return 'request_timeout';
    case 'HPE_INVALID_HEADER_TOKEN':
    case 'HPE_LF_EXPECTED':
    case 'HPE_CR_EXPECTED':
    case 'HPE_UNEXPECTED_SPACE':
      return 'invalid_header';
    default:
      return 'malformed_request';
  }
}

/**
 * Unknown route or unsupported method, both in the failure envelope. 405 only when the path is a
 * route and the method is not one of its methods; anything else is 404 (a 405 naming the method
 * that was used would contradict itself).
 */
function notFound(routes: Iterable<Pick<Operation, 'method' | 'path'>>) {
  const knownPaths = new Map<string, Set<string>>();
  for (const r of routes) knownPaths.set(r.path, new Set([...(knownPaths.get(r.path) ?? []), r.method]));
  return (req: FastifyRequest, reply: FastifyReply) => {
    const path = req.url.split('?')[0] ?? '';
    const allowed = new Set<string>();
    for (const [pattern, methods] of knownPaths) {
      if (matchPath(pattern, path)) for (const m of methods) allowed.add(m);
    }
    if (allowed.size > 0 && !allowed.has(req.method) && !(req.method === 'HEAD' && allowed.has('GET'))) {
      const list = [...allowed];
      reply.header('Allow', list.join(', '));
      return sendFailure(
        reply,
        new AppError('method_not_allowed', `${req.method} is not allowed here; use ${list.join(' or ')}.`),
      );
    }
    return sendFailure(reply, new AppError('route_not_found', `No route ${req.method} ${path}.`));
  };
}

/** Whether `path` matches a route pattern, as the router does (one trailing slash ignored). */
function matchPath(pattern: string, path: string): boolean {
  const a = pattern.split('/');
  const b = (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path).split('/');
  return a.length === b.length && a.every((seg, i) => (seg.startsWith(':') ? b[i] !== '' : seg === b[i]));
}
