import type { FastifyPluginAsync } from 'fastify';
import type { Metrics } from '@loyalty/runtime';

export interface OpsOptions {
  metrics: Metrics;
}

/** /healthz and /metrics on the main port too (the ops port serves them with /readyz). */
export const opsEndpoints: FastifyPluginAsync<OpsOptions> = async (app, { metrics }) => {
  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
  app.get('/metrics', { logLevel: 'warn' }, async (_req, reply) =>
    reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
  );
};
