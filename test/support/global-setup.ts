import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { StartedTestContainer } from 'testcontainers';
import {
  addressOf,
  ensureAuthenticatedNats,
  ensureSecrets,
  has,
  missingServersMessage,
  missingWhere,
  reachable,
  serverAddresses,
} from '../../scripts/bootstrap.mjs';

/**
 * The servers of a test run, decided once per server: one that answers on its configured address
 * (LOYALTY_POSTGRES_URL, LOYALTY_REDIS_URL, LOYALTY_NATS_URL; NATS by default this checkout's own
 * authenticated nats-server) is used; otherwise, when a Docker engine answers, a container runs it
 * for this run (test/support/containers.ts); otherwise the run stops with what to install. The
 * chosen URLs go to the workers through those variables (vitest forks them after this set-up).
 */
type Kind = 'postgres' | 'redis' | 'nats';
const variable: Record<Kind, string> = {
  postgres: 'LOYALTY_POSTGRES_URL',
  redis: 'LOYALTY_REDIS_URL',
  nats: 'LOYALTY_NATS_URL',
};

export default async function setup(): Promise<() => Promise<void>> {
  const addresses = serverAddresses();
  ensureSecrets(); // the NATS users' passwords (var/secrets.json), made on the first run
  const containers: StartedTestContainer[] = [];
  const missing: { kind: Kind; where: string }[] = [];
  const where: string[] = [];
  let docker: Promise<boolean> | undefined;
  const dockerOk = async (): Promise<boolean> => {
    const { dockerAnswers } = await import('./containers.ts');
    return (docker ??= dockerAnswers());
  };
  const inContainer = async (kind: Kind): Promise<void> => {
    const { startServerContainer, urlOf } = await import('./containers.ts');
    const c = await startServerContainer(kind, kind === 'nats' ? { nats: { passwords: natsPasswords() } } : {});
    containers.push(c);
    process.env[variable[kind]] = urlOf(kind, c);
    where.push(`${kind}: container ${c.getName().replace(/^\//, '')} (${urlOf(kind, c)})`);
  };

  for (const kind of ['postgres', 'redis'] as const) {
    const { host, port } = addressOf(addresses[kind], kind);
    if (await reachable(port, host)) where.push(`${kind}: ${host}:${port}`);
    else if (await dockerOk()) await inContainer(kind);
    else missing.push({ kind, where: missingWhere(kind, addresses[kind]) });
  }
  if (addresses.nats) {
    const { host, port } = addressOf(addresses.nats, 'nats');
    if (await reachable(port, host)) where.push(`nats: ${host}:${port}`);
    else if (await dockerOk()) await inContainer('nats');
    else missing.push({ kind: 'nats', where: missingWhere('nats', addresses.nats) });
  } else if (has('nats-server')) {
    // This checkout's own authenticated nats-server (var/nats/), started here if needed.
    const { url } = await ensureAuthenticatedNats();
    process.env.LOYALTY_NATS_URL = url;
    where.push(`nats: ${url}`);
  } else if (await dockerOk()) await inContainer('nats');
  else missing.push({ kind: 'nats', where: missingWhere('nats', null) });

  const teardown = async () => {
    await Promise.all(containers.map((c) => c.stop().catch(() => undefined)));
  };
  if (missing.length > 0) {
    await teardown();
    throw new Error(`The test suite needs real servers: ${missingServersMessage(missing)}`);
  }
  if (containers.length > 0) console.log(`test servers: ${where.join('; ')}`);

  // Tests that run the system as separate processes use the compiled services: build them once
  // here, so no two test files write dist/ at the same time.
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const build = spawnSync(process.execPath, [path.join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) {
    await teardown();
    throw new Error('building the services failed');
  }
  return teardown;
}

/** This checkout's NATS passwords (var/secrets.json), made on the first run. */
function natsPasswords() {
  return ensureSecrets().nats as Record<
    'gateway' | 'identity' | 'ledger' | 'claims' | 'referrals' | 'webhooks' | 'admin',
    string
  >;
}
