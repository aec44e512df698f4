import { Redis } from 'ioredis';
import { Subjects } from '@loyalty/contracts';
import { connectNats, createLogger, Metrics, natsReady, startOpsServer, type Logger } from '@loyalty/runtime';
import { buildGateway } from './app.ts';
import type { GatewayConfig } from './config.ts';
import { CredentialResolver, watchCredentialChanges } from './credentials.ts';

export interface RunningGateway {
  url: string;
  port: number;
  opsPort: number;
  stop(): Promise<void>;
}

/** Composition root of the gateway: connections, the Fastify app, the ops port, shutdown. */
export async function startGateway(config: GatewayConfig, opts: { log?: Logger } = {}): Promise<RunningGateway> {
  const log = opts.log ?? createLogger('gateway', config.LOG_LEVEL);
  const subjects = new Subjects(config.SUBJECT_ROOT);
  const nc = await connectNats(config.NATS_URL, 'gateway', log, {
    user: config.NATS_USER,
    password: config.NATS_PASSWORD,
    tlsCa: config.NATS_TLS_CA,
  });
  const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false });
  redis.on('error', (err) => log.warn({ err: err.message }, 'redis error'));
  const metrics = new Metrics('gateway');
  const credentials = new CredentialResolver(nc, subjects, config.AUTH_CACHE_TTL_MS, config.REQUEST_TIMEOUT_MS);
  const invalidations = watchCredentialChanges(nc, subjects, credentials);
  const app = await buildGateway({ config, nc, redis, subjects, log, metrics, credentials });
  let stopping = false;
  const ops = await startOpsServer({
    host: config.OPS_HOST,
    port: config.OPS_PORT,
    metrics,
    log,
    isShuttingDown: () => stopping,
    checks: {
      nats: () => natsReady(nc),
      redis: async () => void (await redis.ping()),
    },
  });
  await app.listen({ port: config.PORT, host: config.HOST });
  const port = (app.server.address() as { port: number }).port;
  log.info({ port, opsPort: ops.port }, 'gateway listening');
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    opsPort: ops.port,
    async stop() {
      stopping = true;
      await app.close(); // stops accepting, lets in-flight requests finish
      invalidations.unsubscribe();
      await nc.drain();
      redis.disconnect();
      await ops.close();
    },
  };
}
