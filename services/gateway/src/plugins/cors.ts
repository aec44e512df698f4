import fastifyCors from '@fastify/cors';
import fp from 'fastify-plugin';

export interface CorsOptions {
  /** The exact origins (scheme://host[:port]) allowed to call the APIs from a browser. */
  origins: readonly string[];
  /** The methods the API's routes use, for Access-Control-Allow-Methods. */
  methods: readonly string[];
}

/** The request headers a browser app may send (the API's own, and a JSON body). */
const ALLOWED_HEADERS = ['X-App-Id', 'X-Api-Key', 'X-Member-Token', 'Idempotency-Key', 'Content-Type', 'X-Request-Id'];
/** The response headers a browser app may read besides the CORS-safelisted ones. */
const EXPOSED_HEADERS = [
  'X-Request-Id',
  'Retry-After',
  'Idempotent-Replayed',
  'RateLimit',
  'RateLimit-Policy',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
];
/** How long a browser may reuse a preflight answer (browsers cap it: Chromium at 2 h). */
const MAX_AGE_SECONDS = 600;

/**
 * CORS for browser apps that must call the API directly (CORS_ORIGINS; registered only when set).
 * An allowed origin is echoed back, never `*`, and no credentials mode is offered (the API takes
 * its credentials in headers, not cookies). A request from any other origin, or without one, gets
 * no CORS header at all, so its preflight falls through to the envelope's 404/405 as without CORS.
 */
export const cors = fp<CorsOptions>(
  async (app, { origins, methods }) => {
    const allowed = new Set(origins);
    await app.register(fastifyCors, {
      origin: (origin, cb) => cb(null, origin !== undefined && allowed.has(origin) ? origin : false),
      methods: [...methods],
      allowedHeaders: ALLOWED_HEADERS,
      exposedHeaders: EXPOSED_HEADERS,
      maxAge: MAX_AGE_SECONDS,
      credentials: false,
      // An OPTIONS without Access-Control-Request-Method is answered like a preflight rather than
      // with the plugin's text/plain 400, which is not in the envelope.
      strictPreflight: false,
    });
  },
  { name: 'gateway-cors', fastify: '5.x', dependencies: ['gateway-envelope'] },
);
