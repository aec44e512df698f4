// npm run test:containers: the platform as containers, end to end, on a machine with a Docker
// engine (or one that can be installed and started: Debian's docker.io, as root).
//
//  1. a Docker engine: `docker info`, else install docker.io (apt-get) and start dockerd;
//     Compose: `docker compose` (v2), else `docker-compose` (Debian's 1.29, installed if missing);
//  2. base images: each image deploy/compose.yaml and deploy/Dockerfile use is pulled; when no
//     registry answers, a stand-in is built under the same name from Debian packages and the npm
//     registry (scripts/containers/standins.mjs, cached) and the summary says so;
//  3. every image of deploy/Dockerfile (gateway, identity, ledger, claims, referrals, webhooks, migrate);
//  4. deploy/compose.yaml up (project loyalty-test, gateway on GATEWAY_PORT, default 28300, below the ephemeral range a client connection may take a port from), until
//     every container is healthy;
//  5. the smoke flow through the gateway (scripts/containers/flow.mjs);
//  6. a burst of earns, each with its own Idempotency-Key, during which the ledger container is
//     killed and started again; failed earns are retried with the same key; then PostgreSQL must
//     hold every earn exactly once and the balance must be their sum;
//  7. down -v (KEEP_CONTAINERS=1 leaves everything running), and a summary with timings.
//
// Environment: GATEWAY_PORT, MAILPIT_UI_PORT, BURST (earns, default 600), BURST_CONCURRENCY (16),
// HEALTH_TIMEOUT (seconds for every container to be healthy, 600),
// KEEP_CONTAINERS, DOCKERD_ARGS (extra dockerd flags when this script starts it),
// COMPOSE_PROJECT_NAME. `.ci/run` runs it after `npm test` with --skip-without-docker: where no
// Docker engine can be had (not installed and not installable, not root, dockerd does not start)
// it says why and exits 0; once an engine answers, every failure fails the run.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';
import { earnBurst, smokeFlow } from './containers/flow.mjs';
import { ensureImages } from './containers/standins.mjs';
import { ensurePnpm, pnpmCommand, pnpmEnv } from './bootstrap.mjs';
import { productionPackages } from './prune-node-modules.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const composeFile = path.join(root, 'deploy', 'compose.yaml');
const PROJECT = process.env.COMPOSE_PROJECT_NAME || 'loyalty-test';
const GATEWAY_PORT = process.env.GATEWAY_PORT || '28300';
const MAILPIT_UI_PORT = process.env.MAILPIT_UI_PORT || '28325';
const BURST = Number(process.env.BURST ?? 600);
const BURST_CONCURRENCY = Number(process.env.BURST_CONCURRENCY ?? 16);
// Every container healthy within this (HEALTH_TIMEOUT seconds): a busy 2-core machine needs minutes.
const HEALTH_TIMEOUT_MS = Number(process.env.HEALTH_TIMEOUT ?? 600) * 1000;
const images = ['gateway', 'identity', 'ledger', 'claims', 'referrals', 'webhooks', 'migrate'];
const baseUrl = `http://127.0.0.1:${GATEWAY_PORT}`;

const startedAll = performance.now();
const timings = [];
const notes = [];
const log = (...args) => console.log('[containers]', ...args);
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

async function phase(name, fn) {
  log(`── ${name}`);
  const started = performance.now();
  try {
    return await fn();
  } finally {
    timings.push({ name, ms: performance.now() - started });
  }
}

function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 * 2 ** 20, ...opts });
  return { ok: r.status === 0, status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}`, stdout: r.stdout ?? '' };
}
/** `sh` without blocking the event loop (the earn burst's requests go on meanwhile). */
function shAsync(cmd, args) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (status) => resolve({ ok: status === 0, status, out: stdout + stderr, stdout }));
  });
}
function must(cmd, args, opts = {}) {
  const r = sh(cmd, args, opts);
  if (!r.ok)
    throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}):\n${r.out.split('\n').slice(-40).join('\n')}`);
  return r.stdout;
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const isRoot = process.getuid?.() === 0;

const SKIP_WITHOUT_DOCKER = process.argv.includes('--skip-without-docker');
const unknownArgs = process.argv.slice(2).filter((a) => a !== '--skip-without-docker');
if (unknownArgs.length > 0) {
  console.error(`unknown argument ${unknownArgs.join(' ')} (npm run test:containers [-- --skip-without-docker])`);
  process.exit(2);
}

/** No Docker engine can be had on this machine (as opposed to a failure once one answers). */
class NoDockerEngine extends Error {}

// ── 1. Docker engine and Compose ─────────────────────────────────────────────────────────────
async function ensureDocker() {
  if (sh('docker', ['info']).ok) return 'running';
  if (!sh('sh', ['-c', 'command -v dockerd']).ok) {
    if (!isRoot || !sh('sh', ['-c', 'command -v apt-get']).ok)
      throw new NoDockerEngine('no Docker engine: install Docker (or run as root on Debian to install docker.io)');
    log('installing docker.io with apt-get');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const update = sh('apt-get', ['update'], { env });
    const installed = update.ok ? sh('apt-get', ['install', '-y', 'docker.io'], { env }) : update;
    if (!installed.ok)
      throw new NoDockerEngine(
        `no Docker engine and apt-get could not install docker.io:\n${installed.out.slice(-2000)}`,
      );
  }
  if (!isRoot) throw new NoDockerEngine('the Docker engine is not running and only root can start dockerd here');
  // overlay2 first; vfs where the kernel or a nested sandbox refuses overlay mounts.
  for (const driver of [[], ['--storage-driver=vfs']]) {
    const args = [...driver, ...(process.env.DOCKERD_ARGS ?? '').split(/\s+/).filter(Boolean)];
    const logFile = '/var/log/dockerd.log';
    const fd = openSync(logFile, 'a');
    const child = spawn('dockerd', args, { detached: true, stdio: ['ignore', fd, fd] });
    closeSync(fd);
    child.unref();
    let exited = false;
    child.on('exit', () => (exited = true));
    log(`started dockerd ${args.join(' ')} (pid ${child.pid}, log ${logFile})`);
    for (let i = 0; i < 60 && !exited; i++) {
      await sleep(1000);
      if (sh('docker', ['info']).ok) return `started (pid ${child.pid}${driver.length ? `, ${driver.join(' ')}` : ''})`;
    }
    if (!exited) process.kill(child.pid, 'SIGTERM');
    await sleep(2000);
  }
  throw new NoDockerEngine('dockerd did not start; see /var/log/dockerd.log');
}

function composeCommand() {
  if (sh('docker', ['compose', 'version']).ok) return ['docker', 'compose'];
  if (sh('docker-compose', ['version']).ok) return ['docker-compose'];
  if (isRoot && sh('sh', ['-c', 'command -v apt-get']).ok) {
    log("installing Debian's docker-compose (1.29) with apt-get");
    must('apt-get', ['install', '-y', 'docker-compose'], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    return ['docker-compose'];
  }
  throw new Error('neither `docker compose` nor `docker-compose` is installed');
}

// ── 2. and 3. images ─────────────────────────────────────────────────────────────────────────
/**
 * The compose file as `compose up` without a profile starts it: services of an optional profile
 * (the trace and metrics tools of `--profile observability`) are left out, so nothing here pulls
 * their images or waits for them.
 */
function composeModel() {
  const doc = parseDocument(readFileSync(composeFile, 'utf8'), { merge: true }).toJS();
  doc.services = Object.fromEntries(Object.entries(doc.services).filter(([, s]) => !s.profiles));
  return doc;
}
function nodeImageOfDockerfile() {
  const text = readFileSync(path.join(root, 'deploy', 'Dockerfile'), 'utf8');
  const image = /^ARG NODE_IMAGE=(\S+)$/m.exec(text)?.[1];
  if (!image) throw new Error('deploy/Dockerfile has no ARG NODE_IMAGE=<image>');
  return image;
}

/** PEM certificates added to this machine's trust store (a TLS-inspecting proxy's CA), if any. */
function extraCaCerts() {
  const dir = '/usr/local/share/ca-certificates';
  if (!existsSync(dir)) return '';
  return readdirSync(dir)
    .filter((f) => f.endsWith('.crt'))
    .map((f) => readFileSync(path.join(dir, f), 'utf8').trim())
    .join('\n');
}

function buildImages() {
  const buildkit = sh('docker', ['buildx', 'version']).ok;
  const env = { ...process.env, ...(buildkit ? {} : { DOCKER_BUILDKIT: '0' }) };
  const ca = extraCaCerts();
  if (ca) notes.push('the image build trusts /usr/local/share/ca-certificates/*.crt (EXTRA_CA_CERTS build argument)');
  const rows = [];
  for (const service of images) {
    const started = performance.now();
    const args = [
      'build',
      '-f',
      'deploy/Dockerfile',
      '--build-arg',
      `SERVICE=${service}`,
      '-t',
      `loyalty/${service}:dev`,
    ];
    if (ca) args.push('--build-arg', `EXTRA_CA_CERTS=${ca}`);
    must('docker', [...args, '.'], { cwd: root, env });
    const size = Number(must('docker', ['image', 'inspect', '--format', '{{.Size}}', `loyalty/${service}:dev`]).trim());
    rows.push({ service, ms: performance.now() - started, mb: Math.round(size / 2 ** 20) });
    log(`  built loyalty/${service}:dev in ${seconds(performance.now() - started)} (${Math.round(size / 2 ** 20)} MB)`);
  }
  return { rows, builder: buildkit ? 'BuildKit' : 'legacy builder' };
}

// ── 3b. what each image's node_modules holds ─────────────────────────────────────────────────
/** `name@version` of every package in an image's /app/node_modules (nested ones included). */
const listModulesScript = `
const fs = require('fs'), path = require('path'), out = [];
const visit = (dir) => { for (const e of fs.readdirSync(dir)) {
  if (e.startsWith('.')) continue;
  const names = e.startsWith('@') ? fs.readdirSync(path.join(dir, e)).map((n) => e + '/' + n) : [e];
  for (const n of names) { const p = path.join(dir, n);
    out.push(n + '@' + JSON.parse(fs.readFileSync(path.join(p, 'package.json'), 'utf8')).version);
    if (fs.existsSync(path.join(p, 'node_modules'))) visit(path.join(p, 'node_modules')); } } };
visit('/app/node_modules'); console.log(JSON.stringify(out));`;

/**
 * Each image holds its service's production packages and nothing else: exactly the tree `pnpm list
 * --prod` gives for the service (the runtime library for migrate), every one of its direct
 * dependencies among them, and nothing of the SDK.
 */
function checkImageModules() {
  ensurePnpm();
  const rows = {};
  for (const image of images) {
    const project = image === 'migrate' ? '@loyalty/runtime' : `@loyalty/${image}`;
    const listed = JSON.parse(
      must('sh', ['-c', pnpmCommand(`list --prod --depth Infinity --json --filter "${project}"`)], {
        cwd: root,
        env: pnpmEnv(),
      }),
    );
    const expected = productionPackages(listed);
    const held = JSON.parse(
      must('docker', ['run', '--rm', '--entrypoint', 'node', `loyalty/${image}:dev`, '-e', listModulesScript]),
    );
    const extra = [...new Set(held)].filter((p) => !expected.has(p));
    // The project's own npm dependencies (workspace links left out), as exact name@version.
    const shallow = Object.fromEntries(
      Object.entries(listed[0]?.dependencies ?? {}).map(([name, d]) => [name, { version: d.version }]),
    );
    const direct = [...productionPackages([{ dependencies: shallow }])];
    const missing = direct.filter((p) => !held.includes(p));
    if (extra.length || missing.length || held.some((p) => p.startsWith('openapi-fetch@')))
      throw new Error(
        `loyalty/${image}:dev node_modules: ${extra.length} packages not in its production tree (${extra.slice(0, 10).join(', ')}), direct dependencies missing: ${missing.join(', ') || 'none'}`,
      );
    rows[image] = new Set(held).size;
    log(`  loyalty/${image}:dev holds ${rows[image]} packages, all of its production tree`);
  }
  return rows;
}

// ── 4. compose ───────────────────────────────────────────────────────────────────────────────
const composeEnv = {
  ...process.env,
  GATEWAY_PORT,
  MAILPIT_UI_PORT,
  OPERATOR_TOKEN: randomBytes(24).toString('hex'),
  OTP_SECRET: randomBytes(24).toString('hex'),
  SECRETS_KEY: randomBytes(32).toString('base64'),
  AUDIT_KEY: randomBytes(32).toString('hex'),
  POSTGRES_PASSWORD: randomBytes(12).toString('hex'),
};
let compose;
const composeRun = (args, opts = {}) =>
  sh(compose[0], [...compose.slice(1), '-p', PROJECT, '-f', composeFile, ...args], {
    env: composeEnv,
    cwd: root,
    ...opts,
  });
/** `compose up -d` without blocking this process (the health watch runs meanwhile). */
const composeUp = () =>
  new Promise((resolve) => {
    const child = spawn(compose[0], [...compose.slice(1), '-p', PROJECT, '-f', composeFile, 'up', '-d', '--no-build'], {
      env: composeEnv,
      cwd: root,
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ ok: code === 0, out }));
  });
const psArgs = () => [
  'ps',
  '-a',
  '--filter',
  `label=com.docker.compose.project=${PROJECT}`,
  '--format',
  '{{.ID}} {{.Label "com.docker.compose.service"}}',
];
/** Container ids by compose service, from the labels both Composes put on their containers. */
function containerIds(out = sh('docker', psArgs()).stdout) {
  return Object.fromEntries(
    out
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(' ').reverse()),
  );
}
const containerOf = (service) => containerIds()[service] ?? '';
const stateArgs = (id) => [
  'inspect',
  '--format',
  '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}',
  id,
];
function parseState(r) {
  const [status = 'missing', health = 'none'] = r.ok ? r.stdout.trim().split(' ') : [];
  return { status, health };
}
const stateOf = (id) => parseState(sh('docker', stateArgs(id)));
const stateOfAsync = async (id) => parseState(await shAsync('docker', stateArgs(id)));

/**
 * Waits until every one of `services` has been healthy once. The docker calls do not block the
 * event loop: on a loaded machine each takes a good part of a second, and the earn burst waits on
 * the same loop while the killed ledger comes back.
 */
async function waitHealthy(services, timeoutMs, started = performance.now()) {
  const healthyAt = {};
  for (;;) {
    const ids = containerIds((await shAsync('docker', psArgs())).stdout);
    for (const s of services) {
      if (healthyAt[s] !== undefined || !ids[s]) continue;
      if ((await stateOfAsync(ids[s])).health === 'healthy') healthyAt[s] = performance.now() - started;
    }
    if (services.every((s) => healthyAt[s] !== undefined)) return healthyAt;
    if (performance.now() - started > timeoutMs) {
      const pending = services.filter((s) => healthyAt[s] === undefined);
      throw new Error(
        `not healthy after ${seconds(timeoutMs)}: ${pending.map((s) => `${s} (${JSON.stringify(stateOf(containerOf(s)))})`).join(', ')}`,
      );
    }
    await sleep(500);
  }
}

function psql(sql) {
  return must('docker', [
    'exec',
    containerOf('postgres'),
    'psql',
    '-U',
    'loyalty',
    '-d',
    'loyalty',
    '-At',
    '-c',
    sql,
  ]).trim();
}

// ── main ─────────────────────────────────────────────────────────────────────────────────────
const summary = {};
let failed;
let upStarted = false;
try {
  try {
    summary.engine = await phase('Docker engine', ensureDocker);
  } catch (err) {
    if (!(err instanceof NoDockerEngine) || !SKIP_WITHOUT_DOCKER) throw err;
    console.log(`\n[containers] SKIPPED: the container check did not run on this machine: ${err.message}`);
    process.exit(0);
  }
  compose = composeCommand();
  summary.compose = `${compose.join(' ')} (${
    sh(compose[0], [...compose.slice(1), 'version', '--short'])
      .out.trim()
      .split('\n')[0] || sh(compose[0], [...compose.slice(1), 'version']).out.split('\n')[0]
  })`;
  summary.server = must('docker', ['version', '--format', '{{.Server.Version}}']).trim();
  log(`engine ${summary.engine} (server ${summary.server}), compose: ${summary.compose}`);

  const model = composeModel();
  const nodeImage = nodeImageOfDockerfile();
  const infrastructure = Object.entries(model.services)
    .filter(([, s]) => !s.build)
    .map(([, s]) => s.image);
  summary.bases = await phase('base images', () => ensureImages([nodeImage, ...infrastructure], { nodeImage, log }));
  summary.build = await phase('build the images of deploy/Dockerfile', buildImages);
  summary.modules = await phase("each image's node_modules: its production tree only", checkImageModules);

  await phase('compose up and wait for health', async () => {
    composeRun(['down', '-v', '--remove-orphans']);
    upStarted = true;
    const upAt = performance.now();
    // Both Composes wait for each dependency's health before starting what depends on it, so
    // `up -d` returns late; the health of each container is watched meanwhile.
    const up = composeUp();
    const healthy = waitHealthy(Object.keys(model.services), HEALTH_TIMEOUT_MS, upAt);
    // Awaited below; handled now so that a time-out while `up` still runs is not an unhandled rejection.
    healthy.catch(() => {});
    const upResult = await up;
    if (!upResult.ok) {
      throw new Error(`compose up failed:\n${upResult.out.split('\n').slice(-30).join('\n')}`);
    }
    summary.healthyAt = await healthy;
  });

  summary.readOnly = Object.fromEntries(
    ['gateway', 'identity', 'ledger', 'claims', 'referrals', 'webhooks'].map((s) => {
      const id = containerOf(s);
      const cfg = must('docker', ['inspect', '--format', '{{.Config.User}} {{.HostConfig.ReadonlyRootfs}}', id]).trim();
      return [s, cfg];
    }),
  );

  const ctx = await phase('smoke flow through the gateway', () => smokeFlow(baseUrl, composeEnv.OPERATOR_TOKEN, log));
  summary.smoke = ctx.steps;
  const mail = await fetch(`http://127.0.0.1:${MAILPIT_UI_PORT}/api/v1/messages`).then(
    (r) => r.json(),
    () => undefined,
  );
  summary.mails = mail?.total ?? mail?.messages_count;

  await phase(`ledger killed during a burst of ${BURST} earns`, async () => {
    const ledger = containerOf('ledger');
    const before = (
      await (
        await fetch(`${baseUrl}/api/v1/loyalty/points/balance?card_id=${ctx.points.id}&member_id=${ctx.member}`, {
          headers: ctx.appHeaders,
        })
      ).json()
    ).data.points_balance;
    const killAt = Math.floor(BURST / 4);
    const kill = {};
    let killing;
    const stats = await earnBurst(baseUrl, ctx, {
      count: BURST,
      concurrency: BURST_CONCURRENCY,
      // No deadline for the whole burst: how long the killed ledger takes to come back depends on
      // the machine's load (minutes on a busy 2-core one). An earn fails the run only when no earn
      // at all has succeeded for as long as a container may take to become healthy.
      stallMs: HEALTH_TIMEOUT_MS,
      onProgress: (done) => {
        if (done !== killAt) return;
        killing = (async () => {
          kill.atDone = done;
          const t0 = performance.now();
          const killed = await shAsync('docker', ['kill', ledger]);
          if (!killed.ok) throw new Error(`docker kill ledger failed: ${killed.out}`);
          log(`  docker kill ledger after ${done} earns`);
          await sleep(3000);
          const state = await stateOfAsync(ledger);
          kill.restartedByPolicy = state.status === 'running';
          if (state.status !== 'running') {
            const started = await shAsync('docker', ['start', ledger]);
            if (!started.ok) throw new Error(`docker start ledger failed: ${started.out}`);
          }
          log(
            `  ledger ${kill.restartedByPolicy ? 'restarted by its restart policy' : 'started again with docker start'}`,
          );
          const healthy = await waitHealthy(['ledger'], HEALTH_TIMEOUT_MS);
          kill.downMs = performance.now() - t0;
          kill.healthyMs = healthy.ledger;
          log(`  ledger healthy again ${seconds(kill.downMs)} after the kill`);
        })();
        killing.catch(() => {}); // awaited after the burst; handled now so a failure is not unhandled meanwhile
      },
    });
    await killing;
    if (kill.atDone === undefined) throw new Error('the ledger was never killed');
    const after = (
      await (
        await fetch(`${baseUrl}/api/v1/loyalty/points/balance?card_id=${ctx.points.id}&member_id=${ctx.member}`, {
          headers: ctx.appHeaders,
        })
      ).json()
    ).data.points_balance;
    const [rows, distinct, sum] = psql(
      `SELECT count(*), count(DISTINCT reference), coalesce(sum(amount), 0) FROM ledger.journal WHERE card_id = ${ctx.points.id} AND reference LIKE '${stats.prefix}-%'`,
    )
      .split('|')
      .map(Number);
    const keys = Number(
      psql(
        `SELECT count(*) FROM ledger.idempotency_keys WHERE key LIKE 'http:${stats.prefix}-%' AND response IS NOT NULL`,
      ),
    );
    summary.burst = { ...stats, kill, rows, distinct, sum, keys, before, after };
    const problems = [];
    if (rows !== BURST) problems.push(`${rows} journal rows for ${BURST} earns`);
    if (distinct !== BURST) problems.push(`${distinct} distinct references for ${BURST} earns`);
    if (sum !== stats.expectedPoints) problems.push(`journal sum ${sum}, expected ${stats.expectedPoints}`);
    if (after - before !== stats.expectedPoints)
      problems.push(`balance moved by ${after - before}, expected ${stats.expectedPoints}`);
    if (keys !== BURST) problems.push(`${keys} completed idempotency keys for ${BURST} earns`);
    if (stats.retried === 0) problems.push('no earn failed while the ledger was down: the kill proved nothing');
    if (problems.length) throw new Error(`earns not applied exactly once: ${problems.join('; ')}`);
    log(
      `  ${BURST} earns, ${stats.retried} retried (${stats.attempts} attempts): ${rows} journal rows, ${distinct} references, ${sum} points — each exactly once`,
    );
  });

  summary.stopped = await phase('compose stop: NATS and every service exit 0', async () => {
    const stopped = composeRun(['stop']);
    if (!stopped.ok) throw new Error(`compose stop failed:\n${stopped.out.slice(-2000)}`);
    const codes = {};
    for (const [service, id] of Object.entries(containerIds()))
      codes[service] = Number(must('docker', ['inspect', '--format', '{{.State.ExitCode}}', id]).trim());
    const unclean = ['nats', 'gateway', 'identity', 'ledger', 'claims', 'referrals', 'webhooks'].filter(
      (s) => codes[s] !== 0,
    );
    if (unclean.length) throw new Error(`not stopped cleanly: ${unclean.map((s) => `${s} ${codes[s]}`).join(', ')}`);
    return codes;
  });
} catch (err) {
  failed = err;
  console.error(`[containers] FAILED: ${err.stack ?? err}`);
  if (compose && upStarted) {
    for (const s of [
      'gateway',
      'identity',
      'ledger',
      'claims',
      'referrals',
      'webhooks',
      'nats',
      'postgres',
      'redis',
      'mailpit',
    ]) {
      const id = containerOf(s);
      if (!id) continue;
      const state = stateOf(id);
      if (state.health === 'healthy' && s !== 'ledger') continue;
      console.error(`[containers] ── last log lines of ${s} (${state.status}/${state.health})`);
      console.error(sh('docker', ['logs', '--tail', '25', id]).out);
    }
  }
} finally {
  if (compose && upStarted) {
    if (process.env.KEEP_CONTAINERS)
      log(
        `KEEP_CONTAINERS set: project ${PROJECT} left running (${compose.join(' ')} -p ${PROJECT} -f deploy/compose.yaml down -v)`,
      );
    else await phase('compose down -v', async () => void composeRun(['down', '-v', '--remove-orphans']));
  }
}

// ── summary ──────────────────────────────────────────────────────────────────────────────────
const lines = ['', '══ test:containers summary ══'];
if (summary.engine) lines.push(`engine: Docker ${summary.server} (${summary.engine}); compose: ${summary.compose}`);
for (const b of summary.bases ?? [])
  lines.push(
    `base ${b.image.padEnd(26)} ${b.source.padEnd(18)} ${seconds(b.ms).padStart(8)}${b.what ? `  ${b.what}` : ''}`,
  );
if (summary.bases?.some((b) => b.source.startsWith('stand-in')))
  lines.push(
    '  → no registry was reachable: the images above marked stand-in were built locally under the official names',
  );
if (summary.build) {
  lines.push(`images (${summary.build.builder}):`);
  for (const r of summary.build.rows)
    lines.push(`  loyalty/${r.service}:dev`.padEnd(28) + `${seconds(r.ms).padStart(8)}  ${r.mb} MB`);
}
if (summary.modules)
  lines.push(
    `node_modules (packages, each image's production tree only): ${Object.entries(summary.modules)
      .map(([s, n]) => `${s} ${n}`)
      .join(', ')}`,
  );
if (summary.healthyAt)
  lines.push(
    `healthy (from compose up): ${Object.entries(summary.healthyAt)
      .sort((a, b) => a[1] - b[1])
      .map(([s, ms]) => `${s} ${seconds(ms)}`)
      .join(', ')}`,
  );
if (summary.readOnly)
  lines.push(
    `user / read-only root: ${Object.entries(summary.readOnly)
      .map(([s, v]) => `${s} ${v}`)
      .join(', ')}`,
  );
if (summary.smoke)
  lines.push(
    `smoke flow: ${summary.smoke.length} steps ok (${summary.smoke.reduce((a, s) => a + s.ms, 0)} ms); mails caught: ${summary.mails ?? 'n/a'}`,
  );
if (summary.burst) {
  const b = summary.burst;
  lines.push(
    `ledger kill: ${BURST} earns (${BURST_CONCURRENCY} at a time) in ${seconds(b.ms)}; killed after ${b.kill.atDone}, ${b.kill.restartedByPolicy ? 'restarted by policy' : 'docker start'}, healthy ${seconds(b.kill.downMs)} after the kill`,
    `  ${b.retried} earns retried, ${b.attempts} attempts (max ${b.maxAttempts} for one), failures seen: ${JSON.stringify(b.failures)}`,
    `  PostgreSQL: ${b.rows} journal rows, ${b.distinct} distinct references, ${b.keys} idempotency keys, ${b.sum} points = expected ${b.expectedPoints}; balance ${b.before} → ${b.after}`,
  );
}
if (summary.stopped)
  lines.push(
    `compose stop, exit status: ${Object.entries(summary.stopped)
      .map(([svc, code]) => `${svc} ${code}`)
      .join(', ')}`,
  );
for (const n of notes) lines.push(`note: ${n}`);
lines.push('timings:');
for (const t of timings) lines.push(`  ${t.name.padEnd(48)} ${seconds(t.ms).padStart(8)}`);
lines.push(`  ${'total'.padEnd(48)} ${seconds(performance.now() - startedAll).padStart(8)}`);
lines.push(failed ? `RESULT: FAILED (${failed.message.split('\n')[0]})` : 'RESULT: OK');
console.log(lines.join('\n'));
// Exit at once: after a failure a poll or a child's handle of the failed step may still be
// pending, and the process would wait on it (one run was still waiting minutes after its result,
// under CI's 40-minute timeout).
process.exit(failed ? 1 : 0);
