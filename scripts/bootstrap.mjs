// Shared set-up of `npm start` and `npm test`: Node built-ins only, because it runs before the
// dependencies are installed. It installs pnpm and the workspace, and makes sure PostgreSQL,
// NATS (JetStream) and Redis answer on 127.0.0.1, starting the installed servers when needed.
import { execSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const PNPM_VERSION = '9.15.9';

export function step(message) {
  console.log(`\x1b[36m==>\x1b[0m ${message}`);
}

export function fail(message) {
  console.error(`\x1b[31merror:\x1b[0m ${message}`);
  process.exit(1);
}

function has(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

export function run(command, opts = {}) {
  const r = spawnSync('sh', ['-c', command], { stdio: 'inherit', cwd: root, ...opts });
  if (r.status !== 0) fail(`\`${command}\` failed (exit ${r.status})`);
}

export function checkNode() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major < 20 || (major === 20 && minor < 11))
    fail(`Node.js 20.11 or newer is needed (this is ${process.versions.node}).`);
}

/** pnpm through npm when it is missing (corepack cannot fetch it here). */
export function ensurePnpm() {
  if (has('pnpm')) return;
  step(`installing pnpm ${PNPM_VERSION} with npm`);
  run(`npm install -g pnpm@${PNPM_VERSION}`);
  if (!has('pnpm')) fail("pnpm was installed but is not on PATH; add npm's global bin directory to PATH.");
}

export function installDependencies() {
  step('installing dependencies (pnpm install)');
  run('pnpm install --frozen-lockfile --prefer-offline --reporter=silent');
}

export function reachable(port, host = '127.0.0.1', timeoutMs = 1000) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (ok) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

async function waitForPort(port, seconds) {
  for (let i = 0; i < seconds * 4; i++) {
    if (await reachable(port)) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

function tryRun(command) {
  return spawnSync('sh', ['-c', command], { stdio: 'ignore' }).status === 0;
}

const servers = [
  {
    name: 'PostgreSQL',
    port: 5432,
    binary: 'pg_ctlcluster',
    package: 'postgresql',
    start: () => {
      const versions = existsSync('/etc/postgresql') ? readdirSync('/etc/postgresql') : [];
      if (versions.length === 0) return false;
      return tryRun(`pg_ctlcluster --skip-systemctl-redirect ${versions.sort().at(-1)} main start`);
    },
  },
  {
    name: 'NATS (JetStream)',
    port: 4222,
    binary: 'nats-server',
    package: 'nats-server',
    start: () => {
      const dir = existsSync('/var/lib/nats-server') ? '/var/lib/nats-server' : path.join(root, 'var', 'nats');
      mkdirSync(dir, { recursive: true });
      const bin = execSync('command -v nats-server', { shell: '/bin/sh' }).toString().trim();
      const log = existsSync('/var/log') ? '/var/log/nats-server.log' : path.join(root, 'var', 'nats.log');
      if (has('start-stop-daemon')) {
        return tryRun(
          `start-stop-daemon --start --oknodo --background --exec ${bin} -- -a 127.0.0.1 -p 4222 -js -sd ${dir} -l ${log}`,
        );
      }
      return tryRun(`nohup ${bin} -a 127.0.0.1 -p 4222 -js -sd ${dir} -l ${log} >/dev/null 2>&1 &`);
    },
  },
  {
    name: 'Redis',
    port: 6379,
    binary: 'redis-server',
    package: 'redis-server',
    start: () => {
      const dir = existsSync('/var/lib/redis') ? '/var/lib/redis' : path.join(root, 'var');
      const log = existsSync('/var/log/redis') ? '/var/log/redis/ci.log' : path.join(root, 'var', 'redis.log');
      return tryRun(
        `redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir ${dir} --logfile ${log}`,
      );
    },
  },
];

/** Make sure PostgreSQL, NATS with JetStream and Redis answer; start the installed ones that do not. */
export async function ensureInfrastructure() {
  mkdirSync(path.join(root, 'var'), { recursive: true });
  const missing = [];
  for (const s of servers) {
    if (await reachable(s.port)) continue;
    if (!has(s.binary)) {
      missing.push(
        `${s.name}: not running on 127.0.0.1:${s.port} and \`${s.binary}\` is not installed (apt-get install ${s.package})`,
      );
      continue;
    }
    step(`starting ${s.name} on 127.0.0.1:${s.port}`);
    s.start();
    if (!(await waitForPort(s.port, 20))) missing.push(`${s.name}: started but not answering on 127.0.0.1:${s.port}`);
  }
  if (missing.length > 0) fail(`these servers are needed:\n  ${missing.join('\n  ')}`);
}
