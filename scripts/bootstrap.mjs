// Shared set-up of `npm start` and `npm test`: Node built-ins only, because it runs before the
// dependencies are installed. It installs pnpm and the workspace, and makes sure PostgreSQL,
// NATS (JetStream) and Redis answer on 127.0.0.1, starting the installed servers when needed.
import { execSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
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

export function has(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

export function run(command, opts = {}) {
  const r = spawnSync('sh', ['-c', command], { stdio: 'inherit', cwd: root, ...opts });
  if (r.status !== 0) fail(`\`${command}\` failed (exit ${r.status})`);
}

export function checkNode() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  const patch = Number(process.versions.node.split('.')[2]);
  // 20.18.1: testcontainers needs it.
  if (major < 20 || (major === 20 && (minor < 18 || (minor === 18 && patch < 1))))
    fail(`Node.js 20.18.1 or newer is needed (this is ${process.versions.node}).`);
}

// pnpm: always the version of package.json's packageManager, installed with npm into this
// checkout (var/tools), never whatever `pnpm` is on PATH: a global pnpm 10 refuses to switch to
// 9.15.9 (registry signature check), pnpm 12 warns and runs itself against a pnpm 9 lockfile, and
// pnpm 11 does not run on Node 20. The pinned one is called by its path, and the commands it runs
// get its directory first on PATH, so a script calling `pnpm` gets the same version.
const toolsDir = path.join(root, 'var', 'tools');
/** The pinned pnpm's entry point (run with this Node). */
export const pnpmEntry = path.join(toolsDir, 'node_modules', 'pnpm', 'bin', 'pnpm.cjs');
const pnpmBinDir = path.join(toolsDir, 'node_modules', '.bin');

function installedPnpmVersion() {
  try {
    return JSON.parse(readFileSync(path.join(toolsDir, 'node_modules', 'pnpm', 'package.json'), 'utf8')).version;
  } catch {
    return undefined;
  }
}

/** Install pnpm PNPM_VERSION into var/tools with npm, unless it is there already. */
export function ensurePnpm() {
  if (installedPnpmVersion() === PNPM_VERSION && existsSync(pnpmEntry)) return;
  step(`installing pnpm ${PNPM_VERSION} into var/tools with npm (whatever pnpm is on PATH is not used)`);
  mkdirSync(toolsDir, { recursive: true });
  // A package.json of its own, so npm does not take the checkout's for the project to change.
  writeFileSync(path.join(toolsDir, 'package.json'), '{ "private": true }\n');
  run(
    `npm install --prefix "${toolsDir}" --no-save --no-package-lock --no-audit --no-fund --loglevel=error pnpm@${PNPM_VERSION}`,
  );
  if (installedPnpmVersion() !== PNPM_VERSION) fail(`npm did not install pnpm ${PNPM_VERSION} into var/tools`);
}

/**
 * This workspace's pnpm settings. pnpm 9 reads settings from the command line, the environment and
 * .npmrc files, and npm reads .npmrc too and warns about every key it does not know ("Unknown
 * project config"); so they are given to pnpm's own processes only, as environment variables:
 * a flat (hoisted) node_modules, which the compiled services load their npm packages from, and
 * peers installed automatically (pnpm 9's default, stated). deploy/Dockerfile sets the same.
 */
export const PNPM_SETTINGS = { npm_config_node_linker: 'hoisted', npm_config_auto_install_peers: 'true' };

/** The environment of a pinned pnpm command: the workspace's settings, its own directory first on PATH. */
export function pnpmEnv(env = process.env) {
  return { ...env, ...PNPM_SETTINGS, PATH: `${pnpmBinDir}${path.delimiter}${env.PATH ?? ''}` };
}

/** The shell command that runs the pinned pnpm with `args` (a string, as typed after `pnpm`). */
export function pnpmCommand(args) {
  return `"${process.execPath}" "${pnpmEntry}" ${args}`;
}

/** Run the pinned pnpm (ensurePnpm first); fails the set-up when it fails. */
export function runPnpm(args, opts = {}) {
  run(pnpmCommand(args), { ...opts, env: pnpmEnv(opts.env) });
}

export function installDependencies() {
  step(`installing dependencies (pnpm ${PNPM_VERSION} install)`);
  runPnpm('install --frozen-lockfile --prefer-offline --reporter=silent');
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
    kind: 'postgres',
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
    kind: 'nats',
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
    kind: 'redis',
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

// --- Where the servers are ----------------------------------------------------------------
// `npm start` and `npm test` use the same variables. A server answering on its configured address
// is used as it is ("local"); an installed one that is stopped on its default address is started;
// otherwise, when a Docker engine answers, a container runs it (npm start: named containers with
// named volumes, published on the configured address; npm test: testcontainers); otherwise the
// message says what to install.

/** The configured addresses (LOYALTY_NATS_URL unset: this checkout's own authenticated nats-server). */
export function serverAddresses(env = process.env) {
  return {
    postgres: env.LOYALTY_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres',
    redis: env.LOYALTY_REDIS_URL || 'redis://127.0.0.1:6379',
    nats: env.LOYALTY_NATS_URL || null,
  };
}

/** The images of the containers (the official ones by default; compose uses the same tags). */
export function containerImages(env = process.env) {
  return {
    postgres: env.LOYALTY_POSTGRES_IMAGE || 'postgres:16',
    nats: env.LOYALTY_NATS_IMAGE || 'nats:2.10-alpine',
    redis: env.LOYALTY_REDIS_IMAGE || 'redis:7',
  };
}

const defaultPorts = { postgres: 5432, redis: 6379, nats: 4222 };

/** Host and port of a server URL. */
export function addressOf(url, kind) {
  const u = new URL(url);
  return { host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1', port: Number(u.port || defaultPorts[kind]) };
}

const loopback = (host) => ['127.0.0.1', 'localhost', '::1'].includes(host);

/** Whether a Docker engine answers (the docker CLI talks to it). */
export function dockerAnswers() {
  return (
    spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { stdio: 'ignore', timeout: 20_000 }).status === 0
  );
}

const installHints = {
  postgres: {
    name: 'PostgreSQL',
    debian: 'sudo apt-get install postgresql',
    macos: 'brew install postgresql@16 && brew services start postgresql@16',
  },
  nats: { name: 'NATS', debian: 'sudo apt-get install nats-server', macos: 'brew install nats-server' },
  redis: {
    name: 'Redis',
    debian: 'sudo apt-get install redis-server',
    macos: 'brew install redis && brew services start redis',
  },
};

/**
 * What to install, per missing server (three lines each: what is missing, Debian/Ubuntu, macOS),
 * and the alternative that covers all of them: a running Docker engine.
 * `missing`: [{ kind: 'postgres' | 'nats' | 'redis', where: 'nothing answers on ...' }].
 */
export function missingServersMessage(missing) {
  const lines = ['these servers are missing and no Docker engine answers (with Docker, they run as containers):'];
  for (const { kind, where } of missing) {
    const h = installHints[kind];
    lines.push(`  ${h.name}: ${where}`, `    Debian/Ubuntu: ${h.debian}`, `    macOS:         ${h.macos}`);
  }
  lines.push(
    '  Or install Docker instead of all of them: https://docs.docker.com/engine/install/ (Linux), Docker Desktop (macOS), and start it.',
  );
  return lines.join('\n');
}

/** Where a server is missing, in the words of the message above. */
export function missingWhere(kind, url) {
  if (kind === 'nats' && !url) return '`nats-server` is not installed (the platform runs its own authenticated one)';
  const { host, port } = addressOf(url, kind);
  const variable = { postgres: 'LOYALTY_POSTGRES_URL', redis: 'LOYALTY_REDIS_URL', nats: 'LOYALTY_NATS_URL' }[kind];
  return `nothing answers on ${host}:${port} (${variable})`;
}

/** Start the installed servers that are stopped on their default addresses; never fails. */
async function startInstalled(addresses) {
  mkdirSync(path.join(root, 'var'), { recursive: true });
  for (const s of servers) {
    const configured = {
      PostgreSQL: addresses.postgres,
      Redis: addresses.redis,
      'NATS (JetStream)': 'nats://127.0.0.1:4222',
    }[s.name];
    const { host, port } = addressOf(configured, s.kind);
    if (!loopback(host) || port !== s.port) continue; // configured elsewhere: not ours to start
    if (await reachable(s.port)) continue;
    if (!has(s.binary)) continue;
    step(`starting ${s.name} on 127.0.0.1:${s.port}`);
    s.start();
    await waitForPort(s.port, 20);
  }
}

/** `npm test`: start what is installed; the test suite's global set-up decides about the rest. */
export async function startLocalServers() {
  await startInstalled(serverAddresses());
}

/**
 * `npm start`: PostgreSQL, Redis and the authenticated NATS, each local or (when a Docker engine
 * answers) a container; fails with what to install otherwise. `reset` removes the containers'
 * volumes first. Returns each server's URL, whether it is local, and the containers started.
 */
export async function ensureInfrastructure({ reset = false } = {}) {
  const addresses = serverAddresses();
  await startInstalled(addresses);
  const secrets = ensureSecrets();
  const result = { started: [] };
  const missing = [];
  let docker;
  const dockerOk = () => (docker ??= dockerAnswers());
  if (reset && has('docker') && dockerOk()) resetDevContainers();
  for (const kind of ['postgres', 'redis']) {
    const url = addresses[kind];
    const { host, port } = addressOf(url, kind);
    if (await reachable(port, host)) result[kind] = { url, where: 'local' };
    else if (loopback(host) && dockerOk()) {
      result[kind] = await devContainer(kind, url, port, secrets);
      result.started.push(...(result[kind].started ? [result[kind].container] : []));
    } else missing.push({ kind, where: missingWhere(kind, url) });
  }
  if (addresses.nats) {
    const { host, port } = addressOf(addresses.nats, 'nats');
    if (await reachable(port, host)) result.nats = { url: addresses.nats, where: 'local', passwords: secrets.nats };
    else if (loopback(host) && dockerOk()) result.nats = await devContainer('nats', addresses.nats, port, secrets);
    else missing.push({ kind: 'nats', where: missingWhere('nats', addresses.nats) });
  } else if (has('nats-server')) {
    result.nats = { ...(await ensureAuthenticatedNats()), where: 'local' };
    if (result.nats.process) result.ownNats = result.nats.process;
  } else if (dockerOk()) {
    const port = Number(process.env.LOYALTY_NATS_PORT ?? 4223);
    result.nats = await devContainer('nats', `nats://127.0.0.1:${port}`, port, secrets);
  } else missing.push({ kind: 'nats', where: missingWhere('nats', null) });
  if (result.nats?.started) result.started.push(result.nats.container);
  if (missing.length > 0) fail(missingServersMessage(missing));
  if (result.nats) writeFileSync(natsServerFile, `${JSON.stringify({ url: result.nats.url }, null, 2)}\n`);
  return result;
}

// --- npm start's containers: stable names, data in named volumes ---------------------------
export const devContainerNames = {
  postgres: 'loyalty-dev-postgres',
  redis: 'loyalty-dev-redis',
  nats: 'loyalty-dev-nats',
};
/** The password of the PostgreSQL container (published on 127.0.0.1 only). */
const DEV_POSTGRES_PASSWORD = 'loyalty-dev';

function docker(args, opts = {}) {
  return spawnSync('docker', args, { encoding: 'utf8', cwd: root, ...opts });
}

function dockerOrFail(args) {
  const r = docker(args);
  if (r.status !== 0) fail(`\`docker ${args.join(' ')}\` failed: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout.trim();
}

/** Remove npm start's containers and their volumes (npm start -- --reset). */
export function resetDevContainers() {
  step('--reset: removing the containers and volumes of earlier runs (loyalty-dev-*)');
  for (const name of Object.values(devContainerNames)) {
    docker(['rm', '-f', name], { stdio: 'ignore' });
    docker(['volume', 'rm', name], { stdio: 'ignore' });
  }
}

/** Stop the containers this run started (their volumes keep the data). */
export function stopDevContainers(names) {
  if (names.length > 0) docker(['stop', ...names], { stdio: 'ignore' });
}

/**
 * Stop what `ensureInfrastructure` started in this run, after the services that used it: this
 * checkout's own nats-server (when this run started it; one that was already running, e.g. for
 * `npm test`, is left alone) and the containers. Servers of the machine are never stopped.
 */
export async function stopInfrastructure(infra) {
  if (infra.ownNats) {
    console.log(`stopping this checkout's nats-server (pid ${infra.ownNats.pid})`);
    await stopProcess(infra.ownNats.pid);
    infra.ownNats = undefined;
  }
  if (infra.started.length > 0) {
    console.log(`stopping containers ${infra.started.join(', ')} (data kept; npm start -- --reset empties it)`);
    stopDevContainers(infra.started);
  }
}

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * SIGINT (nats-server's clean stop: exit status 0; SIGTERM makes it exit 1), then SIGKILL if it is
 * still there after `seconds`.
 */
export async function stopProcess(pid, seconds = 10) {
  if (!alive(pid)) return;
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < seconds * 10 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  if (alive(pid)) process.kill(pid, 'SIGKILL');
}

/**
 * The container of one server, published on 127.0.0.1:<port>: reused when it exists with the
 * same image and port (started if stopped), otherwise (re)created on the same named volume.
 */
async function devContainer(kind, url, port, secrets) {
  const name = devContainerNames[kind];
  const image = containerImages()[kind];
  // nats-server exits with status 1 on Docker's default SIGTERM, 0 on SIGINT: the container is
  // created with SIGINT as its stop signal (part of the label, so an older container is recreated).
  const stopSignal = kind === 'nats' ? 'SIGINT' : undefined;
  const want = `${image} ${port}${stopSignal ? ` ${stopSignal}` : ''}`;
  const inspect = docker([
    'inspect',
    '--format',
    '{{.State.Running}} {{index .Config.Labels "org.loyalty.dev"}}',
    name,
  ]);
  let running = false;
  if (inspect.status === 0) {
    const [state, ...label] = inspect.stdout.trim().split(' ');
    if (label.join(' ') === want) running = state === 'true';
    else dockerOrFail(['rm', '-f', name]); // another image or port: a new container, same volume
  }
  const exists = docker(['inspect', name], { stdio: 'ignore' }).status === 0;
  const u = new URL(url);
  if (!exists) {
    step(`creating container ${name} (${image}, 127.0.0.1:${port}, volume ${name})`);
    const args = [
      'create',
      '--name',
      name,
      '--label',
      `org.loyalty.dev=${want}`,
      '-p',
      `127.0.0.1:${port}:${defaultPorts[kind]}`,
      ...(stopSignal ? ['--stop-signal', stopSignal] : []),
    ];
    if (kind === 'postgres') {
      args.push('-v', `${name}:/var/lib/postgresql/data`);
      args.push('-e', `POSTGRES_USER=${decodeURIComponent(u.username) || 'postgres'}`);
      args.push('-e', `POSTGRES_PASSWORD=${decodeURIComponent(u.password) || DEV_POSTGRES_PASSWORD}`, image);
    } else if (kind === 'redis') {
      args.push('-v', `${name}:/data`, image, 'redis-server', '--protected-mode', 'no', '--appendonly', 'yes');
    } else {
      args.push('-v', `${name}:/data`, image, '-c', '/etc/nats/loyalty.conf');
    }
    dockerOrFail(args);
  }
  if (kind === 'nats' && !running) {
    // The same users and permissions as the local one (root `*`, this checkout's passwords).
    const config = generateNatsConfig({
      host: '0.0.0.0',
      port: 4222,
      storeDir: '/data',
      out: path.join(natsDir, 'container.conf'),
    });
    dockerOrFail(['cp', config, `${name}:/etc/nats/loyalty.conf`]);
  }
  if (!running) {
    step(`starting container ${name}`);
    dockerOrFail(['start', name]);
  }
  const ready = await waitContainerReady(kind, name, port, secrets);
  if (!ready) fail(`container ${name} did not become ready; see \`docker logs ${name}\``);
  if (kind === 'postgres' && !u.password) u.password = DEV_POSTGRES_PASSWORD;
  return {
    url: kind === 'nats' ? `nats://127.0.0.1:${port}` : u.toString(),
    where: 'container',
    container: name,
    started: !running,
    ...(kind === 'nats' ? { passwords: secrets.nats } : {}),
  };
}

async function waitContainerReady(kind, name, port, secrets) {
  for (let i = 0; i < 240; i++) {
    if (kind === 'postgres') {
      // 127.0.0.1 inside the container: the official image's first start initialises the data
      // directory with a server on the Unix socket only.
      if (docker(['exec', name, 'pg_isready', '-q', '-h', '127.0.0.1'], { stdio: 'ignore' }).status === 0) return true;
    } else if (kind === 'redis') {
      if (docker(['exec', name, 'redis-cli', 'ping'], { stdio: 'ignore' }).status === 0) return true;
    } else if (await natsLogin(port, 'admin', secrets.nats.admin)) return true;
    await new Promise((r) => setTimeout(r, 500));
  }
  return false;
}

// --- NATS with authentication -------------------------------------------------------------
// NATS is not a trusted network: every service connects as its own user with permissions
// (libs/runtime/src/nats-auth.ts). The machine's NATS on 4222 usually has no authentication;
// then a project-owned nats-server runs with the generated config (var/nats/nats-server.conf)
// on 127.0.0.1:$LOYALTY_NATS_PORT (4223), and `npm start` and the tests use that one.

export const NATS_USERS = ['gateway', 'identity', 'ledger', 'claims', 'referrals', 'webhooks', 'admin'];
const natsDir = path.join(root, 'var', 'nats');
const natsConfig = path.join(natsDir, 'nats-server.conf');
const natsPidFile = path.join(natsDir, 'nats-server.pid');
export const secretsFile = path.join(root, 'var', 'secrets.json');
/** Where the URL of the NATS server in use is written (read by test/support/nats.ts and bench). */
export const natsServerFile = path.join(natsDir, 'server.json');

/** The local secrets (made once, mode 0600): OTP secret, operator token, audit key and the NATS passwords. */
export function ensureSecrets() {
  mkdirSync(path.dirname(secretsFile), { recursive: true });
  // Closed before anything is read or added: a file an older version made world-readable too.
  if (existsSync(secretsFile)) chmodSync(secretsFile, 0o600);
  const secrets = existsSync(secretsFile) ? JSON.parse(readFileSync(secretsFile, 'utf8')) : {};
  const before = JSON.stringify(secrets);
  secrets.otp_secret ??= randomBytes(24).toString('hex');
  secrets.operator_token ??= randomBytes(24).toString('hex');
  // The key-encryption key of webhook signing secrets (SECRETS_KEY): 32 random bytes, base64.
  secrets.secrets_key ??= randomBytes(32).toString('base64');
  secrets.audit_key ??= randomBytes(32).toString('hex');
  secrets.nats ??= {};
  for (const user of NATS_USERS) secrets.nats[user] ??= randomBytes(24).toString('hex');
  if (JSON.stringify(secrets) !== before)
    writeFileSync(secretsFile, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
  chmodSync(secretsFile, 0o600);
  return secrets;
}

/** The server's INFO line (null when nothing answers the NATS protocol there). */
export function natsInfo(port, host = '127.0.0.1') {
  return natsExchange(port, host, null);
}

/** Whether `user`/`pass` may connect (CONNECT in verbose mode, then PING: PONG or -ERR). */
export async function natsLogin(port, user, pass, host = '127.0.0.1') {
  return (await natsExchange(port, host, { user, pass })) === 'PONG';
}

function natsExchange(port, host, login) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    let buffer = '';
    let info = null;
    const done = (v) => {
      s.destroy();
      resolve(v);
    };
    s.setTimeout(2000, () => done(null));
    s.once('error', () => done(null));
    // Closed without an answer: e.g. Docker's port proxy before the server in the container listens.
    s.once('close', () => done(null));
    s.on('data', (chunk) => {
      buffer += chunk.toString('utf8');
      let nl;
      while ((nl = buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 2);
        if (!info) {
          if (!line.startsWith('INFO ')) return done(null);
          info = JSON.parse(line.slice(5));
          if (!login) return done(info);
          const connect = { verbose: false, pedantic: false, lang: 'node', version: '0', protocol: 1, ...login };
          s.write(`CONNECT ${JSON.stringify(connect)}\r\nPING\r\n`);
        } else if (line === 'PONG') return done('PONG');
        else if (line.startsWith('-ERR')) return done('ERR');
      }
    });
  });
}

/** The generated config without its bcrypt hashes (they change with every generation). */
const withoutHashes = (text) => text.replace(/"\$2[aby]\$[^"]*"/g, '"<hash>"');

/** The generated configuration (root `*`, this checkout's users), written to `out`. */
function generateNatsConfig({ host = '127.0.0.1', port, storeDir = natsDir, pidFile, out = `${natsConfig}.next` }) {
  mkdirSync(natsDir, { recursive: true });
  const r = spawnSync(
    process.execPath,
    [
      ...['--import', 'tsx', path.join(root, 'scripts', 'nats-config.ts'), '--root', '*', '--admin'],
      ...['--passwords', secretsFile, '--host', host, '--port', String(port)],
      ...['--store-dir', storeDir, ...(pidFile ? ['--pid-file', pidFile] : []), '--out', out],
    ],
    { cwd: root, stdio: 'inherit' },
  );
  if (r.status !== 0) fail('generating the NATS configuration (scripts/nats-config.ts) failed');
  return out;
}

/**
 * The port of this checkout's own authenticated nats-server: the first from $LOYALTY_NATS_PORT
 * (4223) on that is free (started there) or already runs with this checkout's users (reloaded
 * when its configuration changed). A port held by another checkout's server, or by anything
 * else, is skipped, so two clones on one machine (a developer's and CI's) each get their own.
 */
async function ownNats(admin) {
  const first = Number(process.env.LOYALTY_NATS_PORT ?? 4223);
  for (let port = first; port < first + 20; port++) {
    const running = await natsInfo(port);
    const ours = running?.auth_required === true && (await natsLogin(port, 'admin', admin));
    if (running && !ours) continue; // another checkout's server, or one without authentication
    if (!running && (await reachable(port))) continue; // something else listens there
    const next = generateNatsConfig({ port, pidFile: natsPidFile });
    const changed =
      !existsSync(natsConfig) ||
      withoutHashes(readFileSync(natsConfig, 'utf8')) !== withoutHashes(readFileSync(next, 'utf8'));
    if (changed || !existsSync(natsConfig)) renameSync(next, natsConfig);
    if (existsSync(next)) rmSync(next);
    if (running) {
      if (changed && existsSync(natsPidFile)) {
        step(`reloading the NATS configuration (127.0.0.1:${port})`);
        spawnSync('nats-server', ['--signal', `reload=${readFileSync(natsPidFile, 'utf8').trim()}`], {
          stdio: 'inherit',
        });
        await new Promise((r) => setTimeout(r, 500));
      }
      return { port };
    }
    step(`starting an authenticated NATS (JetStream) on 127.0.0.1:${port} (var/nats/nats-server.conf)`);
    const log = openSync(path.join(natsDir, 'nats-server.log'), 'a');
    // Detached, so that a Ctrl-C in the terminal reaches the services first; whoever started it
    // stops it after them (stopInfrastructure).
    const child = spawn('nats-server', ['-c', natsConfig], { detached: true, stdio: ['ignore', log, log] });
    child.unref();
    if (!(await waitForPort(port, 20))) fail('the NATS server did not start; see var/nats/nats-server.log');
    if (!(await natsLogin(port, 'admin', admin))) fail(`cannot log in to the NATS server on 127.0.0.1:${port}`);
    return { port, process: { pid: child.pid } };
  }
  fail(`no port free for this checkout's NATS server from ${first} to ${first + 19}; set LOYALTY_NATS_PORT.`);
}

/**
 * The NATS server the platform uses here, with authentication: the one on 4222 when it requires
 * it (it must then use var/nats/nats-server.conf's users), otherwise a project-owned one on
 * 127.0.0.1:$LOYALTY_NATS_PORT (4223 by default), started (or reused) with the generated config.
 */
export async function ensureAuthenticatedNats() {
  const secrets = ensureSecrets();
  const admin = secrets.nats.admin;
  const machine = await natsInfo(4222);
  let url;
  let started;
  if (machine?.auth_required) {
    if (!(await natsLogin(4222, 'admin', admin)))
      fail(
        'NATS on 127.0.0.1:4222 requires authentication but not with the users of var/secrets.json; run it with var/nats/nats-server.conf or stop it.',
      );
    url = 'nats://127.0.0.1:4222';
  } else {
    const own = await ownNats(admin);
    url = `nats://127.0.0.1:${own.port}`;
    started = own.process;
  }
  writeFileSync(natsServerFile, `${JSON.stringify({ url }, null, 2)}\n`);
  // `process`: the nats-server this call started ({ pid }), undefined when it was already running.
  return { url, passwords: secrets.nats, process: started };
}

// --- Chromium for the console's browser tests -----------------------------------------------
// The browser tests (test/staff/console.browser.test.ts) drive the machine's Chromium with
// playwright-core; no browser is downloaded. `npm test` installs Debian's `chromium` with apt when
// it is missing and it can (root, apt-get there); otherwise only those tests are skipped, saying so.

const CHROMIUM_CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/lib/chromium/chromium'];

/** The Chromium to drive: $CHROMIUM_PATH, else Debian's/Ubuntu's; undefined when there is none. */
export function chromiumPath(env = process.env) {
  if (env.CHROMIUM_PATH) return existsSync(env.CHROMIUM_PATH) ? env.CHROMIUM_PATH : undefined;
  return CHROMIUM_CANDIDATES.find((p) => existsSync(p));
}

/** `npm test`: install Chromium with apt when it is missing and this user can; never fails. */
export function ensureChromium() {
  if (chromiumPath()) return;
  const root_ = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root_ || !has('apt-get')) {
    console.warn(
      '\x1b[33mnote:\x1b[0m no Chromium found: the staff console browser tests will be skipped. Install it (Debian/Ubuntu: `sudo apt-get install chromium`) or set CHROMIUM_PATH.',
    );
    return;
  }
  step('installing Chromium for the console browser tests (apt-get install chromium)');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () =>
    spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], { stdio: 'inherit', env });
  if (install().status !== 0) {
    spawnSync('apt-get', ['update'], { stdio: 'inherit', env });
    install();
  }
  if (!chromiumPath())
    console.warn('\x1b[33mnote:\x1b[0m installing Chromium failed: the staff console browser tests will be skipped.');
}

// --- promtool for the alert rules' tests ----------------------------------------------------
// test/observability runs `promtool check rules` and `promtool test rules` on
// deploy/observability. promtool ships in Debian's `prometheus` package; rather than install that
// package (its post-install starts a Prometheus server where systemd runs), `npm test` downloads
// it with apt and unpacks only its files into var/tools/prometheus (no root needed when apt's
// package lists are there; as root it runs `apt-get update` first when they are not).

const PROMTOOL_UNPACKED = path.join(root, 'var', 'tools', 'prometheus', 'usr', 'bin', 'promtool');

/** The promtool to run: $PROMTOOL_PATH, the one on PATH, else the unpacked one; undefined when none. */
export function promtoolPath(env = process.env) {
  if (env.PROMTOOL_PATH) return existsSync(env.PROMTOOL_PATH) ? env.PROMTOOL_PATH : undefined;
  const onPath = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' });
  if (onPath.status === 0 && onPath.stdout.trim()) return onPath.stdout.trim();
  return existsSync(PROMTOOL_UNPACKED) ? PROMTOOL_UNPACKED : undefined;
}

/** Make promtool available (see above); returns its path, or undefined with the reason printed. */
export function ensurePromtool() {
  const found = promtoolPath();
  if (found) return found;
  if (!has('apt-get') || !has('dpkg-deb')) {
    console.warn(
      '\x1b[33mnote:\x1b[0m no promtool and no apt-get/dpkg-deb to fetch it: install Prometheus\u2019s promtool (Debian/Ubuntu: `sudo apt-get install prometheus`) or set PROMTOOL_PATH; the alert rule tests fail without it.',
    );
    return undefined;
  }
  step('fetching promtool for the alert rule tests (Debian package prometheus, unpacked into var/tools/prometheus)');
  const dir = path.join(root, 'var', 'tools', 'prometheus-deb');
  mkdirSync(dir, { recursive: true });
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const download = () => spawnSync('apt-get', ['download', 'prometheus'], { cwd: dir, stdio: 'inherit', env });
  let r = download();
  if (r.status !== 0 && typeof process.getuid === 'function' && process.getuid() === 0) {
    spawnSync('apt-get', ['update'], { stdio: 'inherit', env });
    r = download();
  }
  const deb =
    r.status === 0 ? readdirSync(dir).find((f) => f.startsWith('prometheus_') && f.endsWith('.deb')) : undefined;
  if (deb)
    spawnSync('dpkg-deb', ['-x', path.join(dir, deb), path.join(root, 'var', 'tools', 'prometheus')], {
      stdio: 'inherit',
    });
  rmSync(dir, { recursive: true, force: true });
  const now = promtoolPath();
  if (!now)
    console.warn(
      '\x1b[33mnote:\x1b[0m fetching promtool failed: install it (Debian/Ubuntu: `sudo apt-get install prometheus`) or set PROMTOOL_PATH; the alert rule tests fail without it.',
    );
  return now;
}
