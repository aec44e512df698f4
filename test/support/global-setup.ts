import { spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureAuthenticatedNats } from '../../scripts/bootstrap.mjs';

/** The suite needs the real servers; say plainly which one is missing instead of timing out. */
const needed = [
  ['PostgreSQL', '127.0.0.1', 5432],
  ['Redis', '127.0.0.1', 6379],
] as const;

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: 2_000 }, () => {
      s.end();
      resolve(true);
    });
    s.on('error', () => resolve(false));
    s.on('timeout', () => (s.destroy(), resolve(false)));
  });
}

export default async function setup(): Promise<void> {
  const missing: string[] = [];
  for (const [name, host, port] of needed)
    if (!(await reachable(host, port))) missing.push(`${name} on ${host}:${port}`);
  if (missing.length > 0) {
    throw new Error(
      `The test suite needs real servers and cannot reach: ${missing.join(', ')}. Run \`npm test\` (it starts them) or start them (see README).`,
    );
  }
  // NATS with authentication (every service its own user): the machine's one when it requires
  // it, otherwise the project-owned one on 127.0.0.1:4223 (var/nats/), started here if needed.
  // Tests read its URL and the users' passwords through test/support/nats.ts.
  await ensureAuthenticatedNats();
  // Tests that run the system as separate processes use the compiled services: build them once
  // here, so no two test files write dist/ at the same time.
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const build = spawnSync(process.execPath, [path.join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('building the services failed');
}
