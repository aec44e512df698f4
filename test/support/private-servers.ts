import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { StartedTestContainer } from 'testcontainers';
import { natsServerConfig } from '@loyalty/runtime';
import { has } from '../../scripts/bootstrap.mjs';
import type { ServerKind } from './containers.ts';
import { localNats } from './nats.ts';

/**
 * Private PostgreSQL, NATS and Redis servers for tests that stop, kill or restart them: each has
 * its own data and port, so the run's shared servers stay up for everything else. One interface,
 * two backends: the machine's server binaries when they are installed, otherwise a container
 * (testcontainers) on a fixed host port, stopped and started again in place.
 * LOYALTY_PRIVATE_SERVERS=containers (or =local) chooses the backend for all three.
 */

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function waitPort(port: number, up: boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const c = net.connect({ host: '127.0.0.1', port });
      c.once('connect', () => (c.destroy(), resolve(true)));
      c.once('error', () => resolve(false));
    });
    if (open === up) return;
    if (Date.now() > deadline) throw new Error(`port ${port} did not become ${up ? 'open' : 'closed'}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function pgBinDir(): string | undefined {
  const base = '/usr/lib/postgresql';
  const version = existsSync(base) ? readdirSync(base).sort().at(-1) : undefined;
  if (version) return path.join(base, version, 'bin');
  // Elsewhere (macOS with Homebrew, other distributions): initdb and pg_ctl on PATH.
  return has('initdb') && has('pg_ctl') ? '' : undefined;
}

const pgBin = (name: string): string => path.join(pgBinDir() ?? '', name);

/** Whether the machine has the server binaries of `kind` (the local backend). */
function localBinaries(kind: ServerKind): boolean {
  const forced = process.env.LOYALTY_PRIVATE_SERVERS;
  if (forced === 'containers') return false;
  if (forced === 'local') return true;
  if (kind === 'postgres') return pgBinDir() !== undefined && (process.getuid?.() !== 0 || has('runuser'));
  return has(kind === 'nats' ? 'nats-server' : 'redis-server');
}

/** Run as the postgres user when we are root (initdb and postgres refuse to run as root). */
function asPostgres(args: string[]): string[] {
  return process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', ...args] : args;
}

/**
 * Run a command to its end without blocking the event loop: `pg_ctl -w` waits up to a minute, and
 * whatever else the calling process serves (a soak's SMTP sink, webhook receiver, load) must go on.
 */
function run(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(args[0]!, args.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.once('error', reject);
    // 'exit', not 'close': a server pg_ctl starts must not be able to hold the command's pipes open.
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${args.join(' ')} failed (${code}): ${out}`)),
    );
  });
}

/** How a server runs: started (again), stopped (gracefully or not), removed with its data. */
interface Backend {
  start(port: number): Promise<void>;
  stop(graceful: boolean): Promise<void>;
  destroy(): Promise<void>;
}

/** A container of the server on a fixed host port; stop and start keep the container and its data. */
class ContainerBackend implements Backend {
  private container: StartedTestContainer | undefined;
  private stopped = false;
  constructor(private readonly kind: ServerKind) {}

  async start(port: number): Promise<void> {
    const { startServerContainer, urlOf, waitReady } = await import('./containers.ts');
    const nats = this.kind === 'nats' ? { passwords: localNats().passwords } : undefined;
    if (!this.container) {
      this.container = await startServerContainer(this.kind, { hostPort: port, nats });
      return;
    }
    if (this.stopped) {
      const client = await runtime();
      await client.container.start(client.container.getById(this.container.getId()));
      this.stopped = false;
    }
    await waitReady(this.kind, urlOf(this.kind, this.container), nats);
  }

  async stop(graceful: boolean): Promise<void> {
    if (!this.container || this.stopped) return;
    const client = await runtime();
    const c = client.container.getById(this.container.getId());
    // docker stop sends the image's stop signal (PostgreSQL: SIGINT, a fast shutdown); kill is a crash.
    if (graceful) await client.container.stop(c, { timeout: 20 });
    else {
      await c.kill({ signal: 'SIGKILL' });
      await c.wait();
    }
    this.stopped = true;
  }

  async destroy(): Promise<void> {
    await this.container?.stop({ remove: true, removeVolumes: true, timeout: 0 }).catch(() => undefined);
    this.container = undefined;
  }
}

async function runtime() {
  const { getContainerRuntimeClient } = await import('testcontainers');
  return getContainerRuntimeClient();
}

/** PostgreSQL from the machine's binaries: initdb in a temporary directory, pg_ctl start and stop. */
class LocalPostgres implements Backend {
  private readonly dir = mkdtempSync(path.join(os.tmpdir(), 'loyalty-pg-'));
  private initialised = false;

  async start(port: number): Promise<void> {
    if (!this.initialised) {
      chmodSync(this.dir, 0o777);
      if (process.getuid?.() === 0) await run(['chown', 'postgres', this.dir]);
      const data = path.join(this.dir, 'data');
      await run(asPostgres([pgBin('initdb'), '-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']));
      this.initialised = true;
    }
    await run(
      asPostgres([
        pgBin('pg_ctl'),
        ...['-D', path.join(this.dir, 'data'), '-l', path.join(this.dir, 'log'), '-w', '-o'],
        `-p ${port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
        'start',
      ]),
    );
  }

  async stop(graceful: boolean): Promise<void> {
    await run(
      asPostgres([
        pgBin('pg_ctl'),
        '-D',
        path.join(this.dir, 'data'),
        '-m',
        graceful ? 'fast' : 'immediate',
        '-w',
        'stop',
      ]),
    );
  }

  async destroy(): Promise<void> {
    const [cmd, ...args] = asPostgres([
      pgBin('pg_ctl'),
      '-D',
      path.join(this.dir, 'data'),
      '-m',
      'immediate',
      '-w',
      'stop',
    ]);
    await run([cmd!, ...args]).catch(() => undefined); // already stopped is fine
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** nats-server or redis-server from the machine's binaries, as a child process. */
class LocalProcess implements Backend {
  private child: ChildProcess | undefined;
  private readonly dir = mkdtempSync(path.join(os.tmpdir(), 'loyalty-srv-'));
  constructor(private readonly kind: 'nats' | 'redis') {}

  async start(port: number): Promise<void> {
    const [cmd, args] = this.kind === 'nats' ? this.natsCommand(port) : this.redisCommand(port);
    this.child = spawn(cmd, args, { stdio: 'ignore' });
  }

  /** With the platform's users and permissions (root `*`) and the local passwords, like the shared one. */
  private natsCommand(port: number): [string, string[]] {
    const config = path.join(this.dir, 'nats-server.conf');
    if (!existsSync(config)) {
      const { admin, ...users } = localNats().passwords;
      writeFileSync(
        config,
        natsServerConfig({
          root: '*',
          passwords: users,
          adminPassword: admin,
          host: '127.0.0.1',
          port,
          storeDir: this.dir,
          bcryptCost: 6,
        }),
      );
    }
    return ['nats-server', ['-c', config]];
  }

  private redisCommand(port: number): [string, string[]] {
    return ['redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']];
  }

  async stop(graceful: boolean): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(graceful ? 'SIGTERM' : 'SIGKILL');
    await exited;
  }

  async destroy(): Promise<void> {
    await this.stop(false);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** One private server: the same start/stop/destroy whichever backend runs it. */
abstract class PrivateServer {
  port = 0;
  protected abstract readonly kind: ServerKind;
  private backendInstance: Backend | undefined;
  protected abstract localBackend(): Backend;

  protected get backend(): Backend {
    this.backendInstance ??= localBinaries(this.kind) ? this.localBackend() : new ContainerBackend(this.kind);
    return this.backendInstance;
  }

  async start(): Promise<void> {
    if (this.port === 0) this.port = await freePort();
    await this.backend.start(this.port);
    await waitPort(this.port, true);
    const { waitReady } = await import('./containers.ts');
    await waitReady(
      this.kind,
      this.readyUrl(),
      this.kind === 'nats' ? { passwords: localNats().passwords } : undefined,
    );
  }

  protected abstract readyUrl(): string;

  protected async stopWith(graceful: boolean): Promise<void> {
    await this.backend.stop(graceful);
    await waitPort(this.port, false);
  }

  async destroy(): Promise<void> {
    await this.backendInstance?.destroy();
  }
}

export class PrivatePostgres extends PrivateServer {
  protected readonly kind = 'postgres';
  /** The container's password (trust authentication on the local backend ignores it). */
  get adminUrl(): string {
    return `postgres://postgres:loyalty-test@127.0.0.1:${this.port}/postgres`;
  }
  protected readyUrl(): string {
    return this.adminUrl;
  }
  protected localBackend(): Backend {
    return new LocalPostgres();
  }
  /** `fast`: a clean shutdown; `immediate`: no checkpoint, as after a crash. */
  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    await this.stopWith(mode === 'fast');
  }
}

export class PrivateNats extends PrivateServer {
  protected readonly kind = 'nats';
  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }
  protected readyUrl(): string {
    return this.url;
  }
  protected localBackend(): Backend {
    return new LocalProcess('nats');
  }
  /** SIGTERM (graceful) or SIGKILL (crash). */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    await this.stopWith(signal !== 'SIGKILL');
  }
}

export class PrivateRedis extends PrivateServer {
  protected readonly kind = 'redis';
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }
  protected readyUrl(): string {
    return this.url;
  }
  protected localBackend(): Backend {
    return new LocalProcess('redis');
  }
  /** SIGTERM (graceful) or SIGKILL (crash). */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    await this.stopWith(signal !== 'SIGKILL');
  }
}
