// `npm start`: the whole system on this machine, in its production form (compiled JavaScript).
// Installs dependencies, makes sure PostgreSQL, NATS (JetStream) and Redis answer (local servers,
// or containers when only Docker is there), builds, starts a local mail sink, every service (each
// runs its migrations) and the gateway, seeds the demo idempotently, and prints where everything
// is. Ctrl-C stops it all gracefully: the services, then what this run started for them (this
// checkout's own nats-server, the containers; their volumes keep the data).
// `npm start -- --reset` starts from empty: the database, the event stream, the containers' volumes.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, createWriteStream, existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { SERVICE_ENV, serviceNodeOptions } from './node-flags.mjs';
import {
  checkNode,
  ensureInfrastructure,
  ensureSecrets,
  ensurePnpm,
  fail,
  installDependencies,
  reachable,
  root,
  run,
  step,
  stopInfrastructure,
} from './bootstrap.mjs';

const PORT = Number(process.env.PORT ?? 3000);
const DATABASE = process.env.LOYALTY_DATABASE ?? 'loyalty';
const MAIL_PORT = Number(process.env.MAIL_SINK_PORT ?? 1025);
const args = process.argv.slice(2);
const RESET = args.includes('--reset');
const unknown = args.filter((a) => a !== '--reset');
if (unknown.length > 0) fail(`unknown argument ${unknown.join(' ')} (npm start [-- --reset])`);

checkNode();
if (await reachable(PORT))
  fail(`something already listens on port ${PORT} (is the system already running? stop it or set PORT).`);
ensurePnpm();
installDependencies();
// PostgreSQL, Redis and the authenticated NATS (the machine's when it requires authentication,
// otherwise a project-owned one with var/nats/nats-server.conf): local servers where they answer
// on the configured addresses (LOYALTY_POSTGRES_URL, LOYALTY_REDIS_URL, LOYALTY_NATS_URL), else
// containers when a Docker engine answers (scripts/bootstrap.mjs).
const infra = await ensureInfrastructure({ reset: RESET });
const { nats } = infra;
// Whatever ends this process (a failed step included), the nats-server it started does not outlive
// it; the graceful path (shutdown below) stops it after the services and waits for it.
process.on('exit', () => {
  if (infra.ownNats) {
    try {
      process.kill(infra.ownNats.pid, 'SIGINT');
    } catch {
      // already stopped
    }
  }
});
// Until the services run, Ctrl-C just ends this process (the exit hook stops its nats-server).
const interruptEarly = () => process.exit(130);
process.on('SIGINT', interruptEarly);
process.on('SIGTERM', interruptEarly);
for (const [label, s] of [
  ['PostgreSQL', infra.postgres],
  ['Redis', infra.redis],
  ['NATS', nats],
])
  step(
    `${label.padEnd(10)} ${s.where === 'local' ? 'local    ' : 'container'} ${redact(s.url)}${s.container ? ` (${s.container}, volume ${s.container})` : ''}`,
  );

/** A URL without its password, for printing. */
function redact(url) {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

// Secrets of this local installation, made once and kept in var/ (git-ignored, mode 0600): the
// OTP secret, the operator token, the webhook secrets' key and each NATS user's password (scripts/bootstrap.mjs).
const var_ = path.join(root, 'var');
// The logs hold what the mail sink echoes (members' codes): this user's only, like var/secrets.json.
mkdirSync(path.join(var_, 'log'), { recursive: true, mode: 0o700 });
chmodSync(path.join(var_, 'log'), 0o700);
const secrets = ensureSecrets();

const { default: pg } = await import('pg');
const admin = new pg.Client({ connectionString: infra.postgres.url });
await admin.connect();
if (RESET) {
  step(`--reset: dropping database "${DATABASE}" and the event stream`);
  await admin.query(`DROP DATABASE IF EXISTS "${DATABASE}" WITH (FORCE)`);
  const { connect } = await import('nats');
  const nc = await connect({ servers: nats.url, user: 'admin', pass: secrets.nats.admin });
  const jsm = await nc.jetstreamManager();
  // The stream of subject root `loyalty` (libs/contracts Subjects.streamName): a new database
  // numbers its outbox from 1 again, and the stream's duplicate window would drop those ids.
  await jsm.streams.delete('LOYALTY_EVENTS').catch(() => undefined);
  await nc.close();
  rmSync(path.join(var_, 'demo-credentials.json'), { force: true });
}
step(`making sure database "${DATABASE}" exists`);
const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${DATABASE}"`);
await admin.end();

step('building (node scripts/build.mjs)');
run('node scripts/build.mjs');

const env = {
  ...process.env,
  DATABASE_URL: infra.postgres.url.replace(/\/[^/?]*(\?|$)/, `/${DATABASE}$1`),
  NATS_URL: nats.url,
  REDIS_URL: infra.redis.url,
  SMTP_URL: process.env.SMTP_URL ?? `smtp://127.0.0.1:${MAIL_PORT}`,
  // Sandbox tenants' mail is sent only to a sandbox server (otherwise not at all): here the sink.
  SANDBOX_SMTP_URL: process.env.SANDBOX_SMTP_URL ?? `smtp://127.0.0.1:${MAIL_PORT}`,
  OTP_SECRET: process.env.OTP_SECRET ?? secrets.otp_secret,
  AUDIT_KEY: process.env.AUDIT_KEY ?? secrets.audit_key,
  OPERATOR_TOKEN: process.env.OPERATOR_TOKEN ?? secrets.operator_token,
  SECRETS_KEY: process.env.SECRETS_KEY ?? secrets.secrets_key,
  PORT: String(PORT),
  OPS_HOST: '127.0.0.1',
  PUBLIC_BASE_URL: `http://127.0.0.1:${PORT}`,
  // Local development: webhook endpoints may be receivers on this machine (127.0.0.1). Never in
  // production, where the SSRF rule refuses private targets.
  WEBHOOK_ALLOW_PRIVATE_TARGETS: process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS ?? 'true',
  // Where notices about tenants without a contact email go (a disabled webhook endpoint): the sink.
  OPERATOR_EMAIL: process.env.OPERATOR_EMAIL ?? 'operator@loyalty.local',
};

const children = [];
let shuttingDown = false;
/** A service (or the gateway) connects to NATS as its own user. */
const natsUser = (name) => ({ NATS_USER: name, NATS_PASSWORD: secrets.nats[name] });

function launch(name, args, extraEnv = {}, echo = false) {
  const logFile = path.join(var_, 'log', `${name}.log`);
  if (existsSync(logFile)) chmodSync(logFile, 0o600);
  const log = createWriteStream(logFile, { flags: 'a', mode: 0o600 });
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...env, ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  if (echo) child.stdout.on('data', (d) => process.stdout.write(d));
  child.on('exit', (code, signal) => {
    if (shuttingDown) return;
    console.error(`\n${name} exited (${signal ?? code}); see var/log/${name}.log. Stopping everything.`);
    shutdown(1);
  });
  children.push({ name, child });
  return child;
}

function shutdown(code) {
  if (shuttingDown) return;
  shuttingDown = true;
  console.log('\nstopping...');
  for (const { child } of children) child.kill('SIGTERM');
  // What this run started for the services (its own nats-server, containers) stops after them.
  let exiting = false;
  const exit = async () => {
    if (exiting) return;
    exiting = true;
    await stopInfrastructure(infra);
    process.exit(code);
  };
  let left = children.length;
  if (left === 0) void exit();
  for (const { child } of children) {
    child.once('exit', () => {
      if (--left === 0) void exit();
    });
  }
  setTimeout(() => void exit(), 15_000).unref();
}
process.off('SIGINT', interruptEarly);
process.off('SIGTERM', interruptEarly);
process.on('SIGINT', () => shutdown(0));
process.on('SIGTERM', () => shutdown(0));

step(`starting the mail sink on 127.0.0.1:${MAIL_PORT}`);
launch('mail-sink', ['scripts/mail-sink.mjs'], {}, true);

const services = [
  ['identity', 9101],
  ['ledger', 9102],
  ['claims', 9103],
  ['referrals', 9104],
  ['webhooks', 9105],
];
for (const [name, opsPort] of services) {
  step(`starting ${name} (ops port ${opsPort}, log var/log/${name}.log)`);
  launch(name, [`services/${name}/dist/main.js`], {
    OPS_PORT: String(opsPort),
    NODE_OPTIONS: serviceNodeOptions(),
    ...SERVICE_ENV,
    ...natsUser(name),
  });
}

async function waitReady(url, what, seconds = 60) {
  for (let i = 0; i < seconds * 4; i++) {
    if (shuttingDown) return;
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  console.error(`${what} did not become ready within ${seconds}s; see var/log/.`);
  shutdown(1);
}

for (const [name, opsPort] of services) await waitReady(`http://127.0.0.1:${opsPort}/readyz`, name);
step(`starting the gateway on port ${PORT} (ops port 9100, log var/log/gateway.log)`);
launch('gateway', ['services/gateway/dist/main.js'], {
  OPS_PORT: '9100',
  NODE_OPTIONS: serviceNodeOptions(),
  ...SERVICE_ENV,
  ...natsUser('gateway'),
});
await waitReady(`http://127.0.0.1:${PORT}/healthz`, 'gateway');

step('seeding the demo (idempotent)');
const seed = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/seed.ts'], {
  cwd: root,
  stdio: 'inherit',
  env: { ...env, LOYALTY_URL: `http://127.0.0.1:${PORT}` },
});
if (seed.status !== 0) {
  console.error('seeding the demo failed');
  shutdown(1);
}

console.log(`
\x1b[32mThe loyalty platform is up.\x1b[0m
  API           http://127.0.0.1:${PORT}/api/v1
  Reference     http://127.0.0.1:${PORT}/docs   (OpenAPI: /openapi.json)
  Console       http://127.0.0.1:${PORT}/console/?tenant=1   (staff; demo manager: manager@demo-coffee.example, the code shows on screen)
  Demo creds    var/demo-credentials.json
  Operator      token in var/secrets.json (operator_token), e.g.
                OPERATOR_TOKEN=$(node -p "require('./var/secrets.json').operator_token") node scripts/dist/admin-cli.js tenant:list
  Mail          every message is logged below and in var/mail.log
  NATS          ${env.NATS_URL} (each service its own user; config var/nats/${nats.where === 'local' ? 'nats-server.conf' : 'container.conf'})
  Logs          var/log/<service>.log
Press Ctrl-C to stop.
`);
