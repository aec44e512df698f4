import type { FastifyPluginAsync } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { buildOpenApiDocument, operations, operatorOperations } from '@loyalty/contracts';

export interface DocsOptions {
  /** Base URL written into the document's servers list. */
  publicBaseUrl: string;
}

/** The OpenAPI document generated from the contract tables, at /openapi.json and browsable at /docs. */
export const docs: FastifyPluginAsync<DocsOptions> = async (app, { publicBaseUrl }) => {
  const document = buildOpenApiDocument({ ...operations, ...operatorOperations }, publicBaseUrl);
  await app.register(swagger, { mode: 'static', specification: { document: document as never } });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { logLevel: 'warn' }, async () => document);
};
