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
  return { nats: await ensureAuthenticatedNats() };
}

// --- NATS with authentication -------------------------------------------------------------
// NATS is not a trusted network: every service connects as its own user with permissions
// (libs/runtime/src/nats-auth.ts). The machine's NATS on 4222 usually has no authentication;
// then a project-owned nats-server runs with the generated config (var/nats/nats-server.conf)
// on 127.0.0.1:$LOYALTY_NATS_PORT (4223), and `npm start` and the tests use that one.

export const NATS_USERS = ['gateway', 'identity', 'ledger', 'claims', 'referrals', 'admin'];
const natsDir = path.join(root, 'var', 'nats');
const natsConfig = path.join(natsDir, 'nats-server.conf');
const natsPidFile = path.join(natsDir, 'nats-server.pid');
export const secretsFile = path.join(root, 'var', 'secrets.json');
/** Where the URL of the NATS server in use is written (read by test/support/nats.ts and bench). */
export const natsServerFile = path.join(natsDir, 'server.json');

/** The local secrets (made once, mode 0600): OTP secret, operator token and the NATS passwords. */
export function ensureSecrets() {
  mkdirSync(path.dirname(secretsFile), { recursive: true });
  // Closed before anything is read or added: a file an older version made world-readable too.
  if (existsSync(secretsFile)) chmodSync(secretsFile, 0o600);
  const secrets = existsSync(secretsFile) ? JSON.parse(readFileSync(secretsFile, 'utf8')) : {};
  const before = JSON.stringify(secrets);
  secrets.otp_secret ??= randomBytes(24).toString('hex');
  secrets.operator_token ??= randomBytes(24).toString('hex');
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

function generateNatsConfig(port) {
  mkdirSync(natsDir, { recursive: true });
  const next = `${natsConfig}.next`;
  const r = spawnSync(
    process.execPath,
    [
      ...['--import', 'tsx', path.join(root, 'scripts', 'nats-config.ts'), '--root', '*', '--admin'],
      ...['--passwords', secretsFile, '--host', '127.0.0.1', '--port', String(port)],
      ...['--store-dir', natsDir, '--pid-file', natsPidFile, '--out', next],
    ],
    { cwd: root, stdio: 'inherit' },
  );
  if (r.status !== 0) fail('generating the NATS configuration (scripts/nats-config.ts) failed');
  return next;
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
    const next = generateNatsConfig(port);
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
      return port;
    }
    step(`starting an authenticated NATS (JetStream) on 127.0.0.1:${port} (var/nats/nats-server.conf)`);
    const log = openSync(path.join(natsDir, 'nats-server.log'), 'a');
    const child = spawn('nats-server', ['-c', natsConfig], { detached: true, stdio: ['ignore', log, log] });
    child.unref();
    if (!(await waitForPort(port, 20))) fail('the NATS server did not start; see var/nats/nats-server.log');
    if (!(await natsLogin(port, 'admin', admin))) fail(`cannot log in to the NATS server on 127.0.0.1:${port}`);
    return port;
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
  if (machine?.auth_required) {
    if (!(await natsLogin(4222, 'admin', admin)))
      fail(
        'NATS on 127.0.0.1:4222 requires authentication but not with the users of var/secrets.json; run it with var/nats/nats-server.conf or stop it.',
      );
    url = 'nats://127.0.0.1:4222';
  } else {
    url = `nats://127.0.0.1:${await ownNats(admin)}`;
  }
  writeFileSync(natsServerFile, `${JSON.stringify({ url }, null, 2)}\n`);
  return { url, passwords: secrets.nats };
}
