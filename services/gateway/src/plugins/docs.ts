import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import swagger, { type StaticDocumentSpec } from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { DOCUMENT_NAMES, DOCUMENTS, documentJson } from '../openapi-documents.ts';

export interface DocsOptions {
  /** Base URL written into the documents' servers lists. */
  publicBaseUrl: string;
}

/**
 * Serve one document at `jsonPath`, serialised once, with a strong ETag (a hash of the body) so
 * a client or the SDK generator asks again cheaply: `If-None-Match` with that tag answers 304.
 * Swagger UI at `uiPrefix`, in its own scope (each UI shows its own document).
 */
async function serveDocument(app: FastifyInstance, body: string, jsonPath: string, uiPrefix: string): Promise<void> {
  const document: unknown = JSON.parse(body);
  if (!isOpenApiDocument(document)) throw new Error(`The document served at ${jsonPath} is not an OpenAPI document.`);
  const etag = `"${createHash('sha256').update(body).digest('base64url')}"`;
  await app.register(async (scope) => {
    await scope.register(swagger, { mode: 'static', specification: { document } });
    await scope.register(swaggerUi, { routePrefix: uiPrefix });
  });
  app.get(jsonPath, { logLevel: 'warn' }, async (req, reply) => {
    reply.header('ETag', etag);
    const given = req.headers['if-none-match'];
    if (typeof given === 'string' && given.split(',').some((t) => t.trim() === etag || t.trim() === '*'))
      return reply.code(304).send();
    return reply.type('application/json; charset=utf-8').send(body);
  });
}

/** The contract tables' documents come typed as plain records; swagger's static mode wants an OpenAPI one. */
function isOpenApiDocument(document: unknown): document is StaticDocumentSpec['document'] {
  if (typeof document !== 'object' || document === null) return false;
  const { openapi, info, paths } = { openapi: undefined, info: undefined, paths: undefined, ...document };
  return typeof openapi === 'string' && typeof info === 'object' && info !== null && typeof paths === 'object';
}

/**
 * The OpenAPI documents generated from the contract tables: the merchant API at /openapi.json
 * (browsable at /docs), the operator API in its own document at /admin/openapi.json (/admin/docs),
 * so the operator's bearer-token API is not on the merchants' reference; the staff API (the
 * console's) in its own at /staff/openapi.json (/staff/docs). Built with the project
 * (openapi-documents.ts), read here.
 */
export const docs: FastifyPluginAsync<DocsOptions> = async (app, { publicBaseUrl }) => {
  for (const name of DOCUMENT_NAMES) {
    const { json, ui } = DOCUMENTS[name];
    await serveDocument(app, documentJson(name, publicBaseUrl), json, ui);
  }
};
