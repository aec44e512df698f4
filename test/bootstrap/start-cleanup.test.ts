import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { has, reachable, stopProcess } from '../../scripts/bootstrap.mjs';

/**
 * `npm start` stops what it started: Ctrl-C ends the services, then this checkout's own
 * nats-server (when that run started it) and the containers, through bootstrap's
 * `stopInfrastructure`. The test runs bootstrap's real `ensureInfrastructure` and
 * `stopInfrastructure` the way scripts/start.mjs does, in a scratch copy of the scripts (its own
 * var/: secrets, NATS configuration and store, on a port of its own), so the checkout's own NATS,
 * which the other tests use, is not touched.
 */
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let scratch: string;
const natsInstalled = has('nats-server');

/** npm start in small: the servers, one service-like child, and start.mjs' order on SIGINT. */
const fixture = `
import { spawn } from 'node:child_process';
import { ensureInfrastructure, stopInfrastructure } from './bootstrap.mjs';
const infra = await ensureInfrastructure();
const service = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
process.on('SIGINT', () => {
  service.once('exit', async () => {
    await stopInfrastructure(infra);
    process.exit(0);
  });
  service.kill('SIGTERM');
});
console.log(JSON.stringify({ ready: true, url: infra.nats.url, started: infra.ownNats?.pid ?? null, service: service.pid }));
`;

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * The service-like children the fixtures started. A fixture that is killed (SIGKILL, a run that
 * dies without cleaning up) leaves its child running: each test ends with none of them alive.
 */
const services: number[] = [];
afterEach(async () => {
  const left = services.splice(0).filter(alive);
  for (const pid of left) process.kill(pid, 'SIGKILL');
  for (let i = 0; i < 50 && left.some(alive); i++) await new Promise((r) => setTimeout(r, 100));
});

/** Runs the fixture until it printed its ready line. */
async function startFixture(
  natsPort: number,
): Promise<{ child: ChildProcess; port: number; started: number | null; service: number }> {
  const child = spawn(process.execPath, [path.join(scratch, 'scripts', 'fixture.mjs')], {
    cwd: scratch,
    env: { ...process.env, LOYALTY_NATS_PORT: String(natsPort), LOYALTY_NATS_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stderr!.on('data', (d) => (out += d));
  const ready = await new Promise<{ url: string; started: number | null; service: number }>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{"ready"'));
      if (line) resolve(JSON.parse(line));
    });
    child.once('exit', (code) => reject(new Error(`the fixture exited (${code}):\n${out}`)));
  });
  services.push(ready.service);
  return { child, port: Number(new URL(ready.url).port), started: ready.started, service: ready.service };
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });

beforeAll(() => {
  scratch = mkdtempSync(path.join(tmpdir(), 'loyalty-start-'));
  mkdirSync(path.join(scratch, 'scripts'));
  for (const file of ['bootstrap.mjs', 'nats-config.ts'])
    copyFileSync(path.join(repo, 'scripts', file), path.join(scratch, 'scripts', file));
  symlinkSync(path.join(repo, 'node_modules'), path.join(scratch, 'node_modules'));
  writeFileSync(path.join(scratch, 'scripts', 'fixture.mjs'), fixture);
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe.skipIf(!natsInstalled)("npm start and this checkout's own nats-server", () => {
  it('Ctrl-C stops the nats-server the run started, after the services, and exits 0', async () => {
    const { child, port, started, service } = await startFixture(await freePort());
    expect(started).toEqual(expect.any(Number));
    expect(alive(started!)).toBe(true);
    expect(alive(service)).toBe(true);
    expect(await reachable(port)).toBe(true);
    child.kill('SIGINT');
    expect(await exited(child)).toBe(0);
    expect(alive(service)).toBe(false);
    expect(alive(started!)).toBe(false);
    expect(await reachable(port)).toBe(false);
  }, 60_000);

  it('leaves alone a nats-server that was already running when it started (npm test uses it too)', async () => {
    const port = await freePort();
    // A first run that dies without cleaning up leaves its server running: that one is "already running".
    // (Its service-like child too, which afterEach ends.)
    const first = await startFixture(port);
    first.child.kill('SIGKILL');
    await exited(first.child);
    try {
      const second = await startFixture(port);
      expect(second).toMatchObject({ port, started: null });
      second.child.kill('SIGINT');
      expect(await exited(second.child)).toBe(0);
      expect(alive(second.service)).toBe(false);
      expect(alive(first.started!)).toBe(true);
      expect(await reachable(port)).toBe(true);
    } finally {
      await stopProcess(first.started!);
    }
  }, 60_000);

  it('start.mjs stops its infrastructure that way (and on any other exit, its nats-server)', () => {
    const start = readFileSync(path.join(repo, 'scripts', 'start.mjs'), 'utf8');
    expect(start).toMatch(/await stopInfrastructure\(infra\);\s+process\.exit\(code\)/);
    expect(start).toMatch(/process\.on\('exit', \(\) => \{\s+if \(infra\.ownNats\)/);
  });

  it('stops nats-server with SIGINT: it exits 0 on it (1 on SIGTERM, the default stop signal)', async () => {
    const exitOn = async (signal: NodeJS.Signals) => {
      const port = await freePort();
      const server = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
      for (let i = 0; i < 100 && !(await reachable(port)); i++) await new Promise((r) => setTimeout(r, 100));
      server.kill(signal);
      return exited(server);
    };
    expect(await exitOn('SIGINT')).toBe(0);
    expect(await exitOn('SIGTERM')).toBe(1);
  }, 30_000);
});
