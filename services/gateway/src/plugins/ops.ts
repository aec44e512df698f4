import type { FastifyPluginAsync } from 'fastify';
import type { Metrics } from '@loyalty/runtime';

export interface OpsOptions {
  metrics: Metrics;
  /** Serve /metrics here too (PUBLIC_METRICS); by default only the ops port serves it. */
  publicMetrics: boolean;
}

/**
 * /healthz on the main port too (the ops port serves it with /readyz and /metrics). The metrics
 * name routes, error codes and volumes: not for whoever reaches the public port, unless asked.
 */
export const opsEndpoints: FastifyPluginAsync<OpsOptions> = async (app, { metrics, publicMetrics }) => {
  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
  if (publicMetrics)
    app.get('/metrics', { logLevel: 'warn' }, async (_req, reply) =>
      reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
    );
};
