import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { AppError, type Operation } from '@loyalty/contracts';
import type { Metrics } from '@loyalty/runtime';
import { sendFailure } from '../envelope.ts';

export interface EnvelopeOptions {
  metrics: Metrics;
  /** The routes of the API, to tell an unsupported method (405) from an unknown route (404). */
  routes: Iterable<Pick<Operation, 'method' | 'path'>>;
}

/**
 * Every answer in the envelope: the error handler and the not-found/405 handler map failures to
 * `{ success: false, error }`, the JSON parser turns a bad body into `invalid_json`. Also the
 * request id header and the HTTP metrics (duration of every request, count of every failure).
 */
export const envelope = fp<EnvelopeOptions>(
  async (app, { metrics, routes }) => {
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
    addJsonParser(app);
    app.setErrorHandler(mapError);
    app.setNotFoundHandler(notFound(routes));
  },
  { name: 'gateway-envelope', fastify: '5.x' },
);

/** An empty body on a POST is an empty object, not a parse error. */
function addJsonParser(app: FastifyInstance): void {
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, {});
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new AppError('invalid_json'), undefined);
    }
  });
}

function mapError(err: Error & { statusCode?: number; code?: string }, req: FastifyRequest, reply: FastifyReply) {
  if (err instanceof AppError) return sendFailure(reply, err);
  if (err.statusCode === 429)
    return sendFailure(
      reply,
      new AppError('rate_limited', undefined, { retry_after_seconds: Number(reply.getHeader('retry-after') ?? 1) }),
    );
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendFailure(reply, new AppError('payload_too_large'));
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return sendFailure(reply, new AppError('unsupported_media_type'));
  if (err.code?.startsWith('FST_ERR_CTP') || err.statusCode === 400)
    return sendFailure(reply, new AppError('invalid_json'));
  req.log.error({ err }, 'unhandled gateway error');
  return sendFailure(reply, new AppError('internal_error'));
}

/** Unknown route or unsupported method: both in the failure envelope. */
function notFound(routes: Iterable<Pick<Operation, 'method' | 'path'>>) {
  const knownPaths = new Map<string, Set<string>>();
  for (const r of routes) knownPaths.set(r.path, new Set([...(knownPaths.get(r.path) ?? []), r.method]));
  return (req: FastifyRequest, reply: FastifyReply) => {
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
  };
}

function matchPath(pattern: string, path: string): boolean {
  const a = pattern.split('/');
  const b = path.replace(/\/+$/, '').split('/');
  return a.length === b.length && a.every((seg, i) => seg.startsWith(':') || seg === b[i]);
}
