import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { natsServerConfig } from '@loyalty/runtime';
import { localNats } from './nats.ts';

/**
 * Private PostgreSQL, NATS and Redis servers for tests that stop, kill or restart them: each has
 * its own data directory and port, so the machine's shared servers stay up for everything else.
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

function pgBin(name: string): string {
  const base = '/usr/lib/postgresql';
  const version = existsSync(base) ? readdirSync(base).sort().at(-1) : undefined;
  if (!version) throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql');
  return path.join(base, version, 'bin', name);
}

/** Run as the postgres user when we are root (initdb and postgres refuse to run as root). */
function asPostgres(args: string[]): string[] {
  return process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', ...args] : args;
}

function run(args: string[]): void {
  const r = spawnSync(args[0]!, args.slice(1), { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${args.join(' ')} failed: ${r.stderr || r.stdout}`);
}

export class PrivatePostgres {
  readonly dir = mkdtempSync(path.join(os.tmpdir(), 'loyalty-pg-'));
  port = 0;
  get adminUrl(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  async start(): Promise<void> {
    if (this.port === 0) {
      this.port = await freePort();
      chmodSync(this.dir, 0o777);
      if (process.getuid?.() === 0) run(['chown', 'postgres', this.dir]);
      run(
        asPostgres([
          pgBin('initdb'),
          '-D',
          path.join(this.dir, 'data'),
          '-U',
          'postgres',
          '--auth=trust',
          '-E',
          'UTF8',
          '--no-sync',
        ]),
      );
    }
    run(
      asPostgres([
        pgBin('pg_ctl'),
        '-D',
        path.join(this.dir, 'data'),
        '-l',
        path.join(this.dir, 'log'),
        '-w',
        '-o',
        `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
        'start',
      ]),
    );
    await waitPort(this.port, true);
  }

  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    run(asPostgres([pgBin('pg_ctl'), '-D', path.join(this.dir, 'data'), '-m', mode, '-w', 'stop']));
    await waitPort(this.port, false);
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
    spawnSync(cmd!, args); // already stopped is fine
    rmSync(this.dir, { recursive: true, force: true });
  }
}

abstract class PrivateProcess {
  port = 0;
  protected child: ChildProcess | undefined;
  protected abstract command(): [string, string[]];

  async start(): Promise<void> {
    if (this.port === 0) this.port = await freePort();
    const [cmd, args] = this.command();
    this.child = spawn(cmd, args, { stdio: 'ignore' });
    await waitPort(this.port, true);
  }

  /** SIGTERM (graceful) or SIGKILL (crash). */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await exited;
    await waitPort(this.port, false);
  }

  async destroy(): Promise<void> {
    await this.stop('SIGKILL');
  }
}

export class PrivateNats extends PrivateProcess {
  readonly dir = mkdtempSync(path.join(os.tmpdir(), 'loyalty-nats-'));
  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }
  /** With the platform's users and permissions (root `*`) and the local passwords, like the shared one. */
  protected command(): [string, string[]] {
    const config = path.join(this.dir, 'nats-server.conf');
    if (!existsSync(config)) {
      const { passwords } = localNats();
      const { admin, ...users } = passwords;
      writeFileSync(
        config,
        natsServerConfig({
          root: '*',
          passwords: users,
          adminPassword: admin,
          host: '127.0.0.1',
          port: this.port,
          storeDir: this.dir,
          bcryptCost: 6,
        }),
      );
    }
    return ['nats-server', ['-c', config]];
  }
  override async destroy(): Promise<void> {
    await super.destroy();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export class PrivateRedis extends PrivateProcess {
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }
  protected command(): [string, string[]] {
    return ['redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']];
  }
}
