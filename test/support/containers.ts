import net from 'node:net';
import pg from 'pg';
import { GenericContainer, getContainerRuntimeClient, type StartedTestContainer } from 'testcontainers';
import { natsServerConfig, type NatsUser } from '@loyalty/runtime';
import { containerImages, natsLogin } from '../../scripts/bootstrap.mjs';

/**
 * The test suite's servers as containers (testcontainers), for machines with a Docker engine but
 * without the servers themselves: the shared ones of a run (test/support/global-setup.ts) and the
 * private ones that tests stop and restart (test/support/private-servers.ts). Images from
 * LOYALTY_POSTGRES_IMAGE, LOYALTY_NATS_IMAGE, LOYALTY_REDIS_IMAGE (the official ones by default).
 */

// Ryuk (testcontainers' reaper) is an image of its own, which machines without a registry do not
// have; the suite removes its containers itself (global teardown, afterAll). TESTCONTAINERS_RYUK_DISABLED=false turns it back on.
process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';

/** Whether a Docker engine answers (as testcontainers finds it: DOCKER_HOST, the socket, ...). */
export async function dockerAnswers(): Promise<boolean> {
  try {
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

export const POSTGRES_PASSWORD = 'loyalty-test';

export type ServerKind = 'postgres' | 'nats' | 'redis';

/** Container port of each server. */
export const internalPort: Record<ServerKind, number> = { postgres: 5432, nats: 4222, redis: 6379 };

export interface NatsAuth {
  passwords: Record<NatsUser | 'admin', string>;
}

/**
 * A server's container, its host port fixed (`hostPort`) so that a restart keeps the address the
 * services were given, or chosen by Docker (0).
 */
export async function startServerContainer(
  kind: ServerKind,
  opts: { hostPort?: number; nats?: NatsAuth } = {},
): Promise<StartedTestContainer> {
  const image = containerImages()[kind];
  const port = opts.hostPort ? { container: internalPort[kind], host: opts.hostPort } : internalPort[kind];
  let container = new GenericContainer(image).withExposedPorts(port).withLabels({ 'org.loyalty.test': 'true' });
  if (kind === 'postgres') {
    container = container
      .withEnvironment({ POSTGRES_PASSWORD })
      .withCommand(['postgres', '-c', 'fsync=off', '-c', 'max_connections=300']);
  } else if (kind === 'redis') {
    container = container.withCommand(['redis-server', '--protected-mode', 'no', '--save', '', '--appendonly', 'no']);
  } else {
    const { admin, ...users } = opts.nats!.passwords;
    // The platform's users and permissions (root `*`: test runs use random subject roots).
    const config = natsServerConfig({
      root: '*',
      passwords: users,
      adminPassword: admin,
      host: '0.0.0.0',
      port: 4222,
      storeDir: '/data',
      bcryptCost: 6,
    });
    container = container
      .withCopyContentToContainer([{ content: config, target: '/etc/nats/loyalty.conf' }])
      .withCommand(['-c', '/etc/nats/loyalty.conf']);
  }
  const started = await container.start();
  await waitReady(kind, urlOf(kind, started), opts.nats);
  return started;
}

/** The URL a server's container answers on (PostgreSQL: the admin database). */
export function urlOf(kind: ServerKind, c: StartedTestContainer): string {
  const hostPort = `${c.getHost()}:${c.getMappedPort(internalPort[kind])}`;
  if (kind === 'postgres') return `postgres://postgres:${POSTGRES_PASSWORD}@${hostPort}/postgres`;
  return `${kind}://${hostPort}`;
}

/**
 * Until the server answers its own protocol: a published port accepts connections as soon as the
 * container runs (Docker's proxy), before the server inside listens.
 */
export async function waitReady(kind: ServerKind, url: string, nats?: NatsAuth, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const u = new URL(url);
  for (;;) {
    if (await answers(kind, url, u, nats)) return;
    if (Date.now() > deadline) throw new Error(`${kind} on ${u.host} did not answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function answers(kind: ServerKind, url: string, u: URL, nats?: NatsAuth): Promise<boolean> {
  if (kind === 'postgres') {
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
    c.on('error', () => undefined);
    try {
      await c.connect();
      await c.query('SELECT 1');
      return true;
    } catch {
      return false;
    } finally {
      await c.end().catch(() => undefined);
    }
  }
  if (kind === 'nats') return natsLogin(Number(u.port), 'admin', nats!.passwords.admin, u.hostname);
  return new Promise((resolve) => {
    const s = net.connect({ host: u.hostname, port: Number(u.port) });
    const done = (ok: boolean) => (s.destroy(), resolve(ok));
    s.setTimeout(2_000, () => done(false));
    s.once('error', () => done(false));
    s.once('connect', () => s.write('PING\r\n'));
    s.once('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}
