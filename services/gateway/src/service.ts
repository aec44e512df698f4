import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { Subjects } from '@loyalty/contracts';
import {
  connectNats,
  createLogger,
  Metrics,
  natsReady,
  ServiceClient,
  startInOrder,
  startOpsServer,
  type Clock,
  type Logger,
} from '@loyalty/runtime';
import { buildGateway } from './app.ts';
import type { GatewayConfig } from './config.ts';
import { CredentialResolver } from './credentials.ts';
import { StaffCredentialResolver } from './staff-credentials.ts';

export interface RunningGateway {
  url: string;
  port: number;
  opsPort: number;
  stop(): Promise<void>;
}

const isAddress = (a: string | AddressInfo | null): a is AddressInfo => typeof a === 'object' && a !== null;

/**
 * Composition root of the gateway: connections, its caches (verified keys, member tokens and
 * staff tokens, forgotten by identity's broadcast and on a NATS reconnect), the Fastify app, the
 * ops port, shutdown in the reverse order. `clock`: what a cached staff session's end is compared
 * with (the system clock; tests pass the services' clock).
 */
export async function startGateway(
  config: GatewayConfig,
  opts: { log?: Logger; clock?: Clock } = {},
): Promise<RunningGateway> {
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
  const timeoutMs = config.REQUEST_TIMEOUT_MS;
  const cacheOpts = { nc, subjects, ttlMs: config.AUTH_CACHE_TTL_MS, timeoutMs, log, metrics };
  const credentials = new CredentialResolver(cacheOpts);
  const staffCredentials = new StaffCredentialResolver({ ...cacheOpts, clock: opts.clock });
  const stopCaches = await startInOrder([...credentials.caches, ...staffCredentials.caches]);
  const identity = new ServiceClient(nc, subjects, { timeoutMs, log });
  const deps = { config, nc, redis, subjects, log, metrics };
  const app = await buildGateway({ ...deps, credentials, staffCredentials, identity });
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
  const address = app.server.address();
  const port = isAddress(address) ? address.port : config.PORT;
  log.info({ port, opsPort: ops.port }, 'gateway listening');
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    opsPort: ops.port,
    async stop() {
      stopping = true;
      await app.close(); // stops accepting, lets in-flight requests finish
      await stopCaches();
      await nc.drain();
      redis.disconnect();
      await ops.close();
    },
  };
}
