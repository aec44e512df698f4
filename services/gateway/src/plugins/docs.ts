import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import swaggerUi from '@fastify/swagger-ui';
import { stringify as toYaml } from 'yaml';
import { DOCUMENT_NAMES, DOCUMENTS, documentJson } from '../openapi-documents.ts';
import { staticFileErrors } from './envelope.ts';

export interface DocsOptions {
  /** Base URL written into the documents' servers lists. */
  publicBaseUrl: string;
}

/**
 * One served document, held gzip-compressed: the merchant API's is 744 KB of JSON (1.5 MB as a
 * JavaScript string, as much again parsed), 40 KB compressed. A client that accepts gzip (every
 * browser, curl --compressed, fetch) gets the held bytes as they are; another gets them inflated.
 * Each representation has its own strong ETag, as HTTP asks of different content codings.
 */
interface HeldDocument {
  gzip: Buffer;
  etag: { identity: string; gzip: string };
}

function hold(body: string): HeldDocument {
  const tag = createHash('sha256').update(body).digest('base64url');
  return { gzip: gzipSync(body), etag: { identity: `"${tag}"`, gzip: `"${tag}-gzip"` } };
}

/** Whether `Accept-Encoding` takes gzip (named, or `*`, with a quality above zero). */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  return header.split(',').some((part) => {
    const [coding = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (coding !== 'gzip' && coding !== '*') return false;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

function notModified(req: FastifyRequest, etag: string): boolean {
  const given = req.headers['if-none-match'];
  return typeof given === 'string' && given.split(',').some((t) => t.trim() === etag || t.trim() === '*');
}

/**
 * The `swagger()` decorator Swagger UI reads its document from (its `/json` and `/yaml` routes),
 * under the name of `@fastify/swagger`, whose static mode would give the same decorator but keep
 * the parsed document for good: here it is inflated and parsed when the UI asks for it.
 */
const documentDecorator = fp<{ document: HeldDocument }>(
  async (scope, { document }) => {
    const parsed = (): unknown => JSON.parse(gunzipSync(document.gzip).toString('utf8'));
    scope.decorate('swagger', (opts?: { yaml?: boolean }) => (opts?.yaml ? toYaml(parsed()) : parsed()));
  },
  { name: '@fastify/swagger', fastify: '5.x' },
);

/**
 * Serve one document at `jsonPath` with its strong ETag (`If-None-Match` with that tag answers
 * 304), and Swagger UI at `uiPrefix`, in its own scope (each UI shows its own document) with its
 * security headers (`policy`, see {@link docsPolicy}; no sniffing, no referrer, no framing).
 */
async function serveDocument(
  app: FastifyInstance,
  body: string,
  jsonPath: string,
  uiPrefix: string,
  policy: string,
): Promise<void> {
  const document = hold(body);
  await app.register(async (scope) => {
    // A path out of Swagger UI's directory (`/docs/static/../x`) is a 404, not a 500.
    scope.setErrorHandler(staticFileErrors);
    scope.addHook('onSend', async (_req, reply, payload) => {
      reply.header('Content-Security-Policy', policy);
      reply.header('X-Content-Type-Options', 'nosniff');
      reply.header('Referrer-Policy', 'no-referrer');
      reply.header('X-Frame-Options', 'DENY');
      return payload;
    });
    await scope.register(documentDecorator, { document });
    await scope.register(swaggerUi, { routePrefix: uiPrefix });
  });
  app.get(jsonPath, { logLevel: 'warn' }, async (req, reply) => {
    const gzip = acceptsGzip(req.headers['accept-encoding']);
    const etag = gzip ? document.etag.gzip : document.etag.identity;
    reply.header('ETag', etag).header('Vary', 'Accept-Encoding');
    if (notModified(req, etag)) return reply.code(304).send();
    reply.type('application/json; charset=utf-8');
    return gzip ? reply.header('Content-Encoding', 'gzip').send(document.gzip) : reply.send(gunzipSync(document.gzip));
  });
}

/**
 * The OpenAPI documents generated from the contract tables: the merchant API at /openapi.json
 * (browsable at /docs), the operator API in its own document at /admin/openapi.json (/admin/docs),
 * so the operator's bearer-token API is not on the merchants' reference; the staff API (the
 * console's) in its own at /staff/openapi.json (/staff/docs). Built with the project
 * (openapi-documents.ts), read here once and held compressed.
 */
export const docs: FastifyPluginAsync<DocsOptions> = async (app, { publicBaseUrl }) => {
  const policy = docsPolicy(publicBaseUrl);
  for (const name of DOCUMENT_NAMES) {
    const { json, ui } = DOCUMENTS[name];
    await serveDocument(app, documentJson(name, publicBaseUrl), json, ui, policy);
  }
};

/**
 * The content security policy of the Swagger UI pages (and their assets): scripts and styles only
 * from the gateway (Swagger UI's own files; inline styles, which its components set), images from
 * it and `data:` (its logo), no plugins, no framing, no base or form elsewhere. "Try it out" calls
 * the documents' server, PUBLIC_BASE_URL, which may be another origin than the one the page was
 * opened on (behind a proxy): that origin is allowed to be connected to as well.
 */
export function docsPolicy(publicBaseUrl: string): string {
  let api = '';
  try {
    const { origin } = new URL(publicBaseUrl);
    if (origin !== 'null') api = ` ${origin}`;
  } catch {
    // Not a URL: only the page's own origin.
  }
  return `default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'${api}; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'`;
}
