import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVICE_ENV, serviceNodeOptions } from '../../scripts/node-flags.mjs';
import { natsUserEnv } from './nats.ts';
import { freePort } from './private-servers.ts';

/**
 * The system as separate processes in its production form (compiled JavaScript): any number of
 * replicas per service and of gateways, each its own process with its own ops port, so tests and
 * benchmarks can kill, stop and restart them and read their memory.
 */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export type ClusterService = 'identity' | 'ledger' | 'claims' | 'referrals' | 'webhooks' | 'gateway';

export class Replica {
  child: ChildProcess | undefined;
  opsPort = 0;
  port = 0;
  exitCode: number | null = null;
  exitSignal: NodeJS.Signals | null = null;
  private peakRssKb = 0;
  private sampler: NodeJS.Timeout | undefined;

  constructor(
    readonly service: ClusterService,
    readonly name: string,
    private readonly env: Record<string, string>,
    private readonly logDir: string,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    if (this.opsPort === 0) this.opsPort = await freePort();
    if (this.service === 'gateway' && this.port === 0) this.port = await freePort();
    const log = createWriteStream(path.join(this.logDir, `${this.name}.log`), { flags: 'a' });
    this.exitCode = null;
    this.exitSignal = null;
    const child = spawn(process.execPath, [path.join(repoRoot, 'services', this.service, 'dist', 'main.js')], {
      cwd: repoRoot,
      // The services' production heap flags and malloc setting (scripts/node-flags.mjs) before any the caller sets.
      env: {
        ...process.env,
        ...SERVICE_ENV,
        // Each replica connects as its service's own NATS user (on the cluster's NATS_URL).
        ...natsUserEnv(this.service, this.env.NATS_URL),
        ...this.env,
        NODE_OPTIONS: serviceNodeOptions(this.env.NODE_OPTIONS ?? process.env.NODE_OPTIONS),
        OPS_PORT: String(this.opsPort),
        OPS_HOST: '127.0.0.1',
        ...(this.port ? { PORT: String(this.port), HOST: '127.0.0.1' } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    child.once('exit', (code, signal) => {
      this.exitCode = code;
      this.exitSignal = signal;
    });
    this.child = child;
    this.sampler = setInterval(() => this.sampleRss(), 250);
    this.sampler.unref();
    await this.waitReady();
  }

  /** Poll the ops port's /readyz (and the gateway's main port) until it answers. */
  async waitReady(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const url = `http://127.0.0.1:${this.opsPort}/readyz`;
    for (;;) {
      if (this.exitCode !== null || this.exitSignal !== null)
        throw new Error(`${this.name} exited during start (see ${this.logDir}/${this.name}.log)`);
      try {
        if ((await fetch(url)).ok) return;
      } catch {
        // not up yet
      }
      if (Date.now() > deadline) throw new Error(`${this.name} not ready after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private sampleRss(): void {
    const pid = this.child?.pid;
    if (!pid || this.exitCode !== null || this.exitSignal !== null) return;
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const hwm = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
      if (hwm) this.peakRssKb = Math.max(this.peakRssKb, Number(hwm));
    } catch {
      // process gone
    }
  }

  /** Peak resident memory (VmHWM) seen for this process, in MB. */
  peakRssMb(): number {
    this.sampleRss();
    return Math.round((this.peakRssKb / 1024) * 10) / 10;
  }

  /** Send a signal and wait for the exit; resolves with the exit code (null when killed by a signal). */
  async signal(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const child = this.child;
    if (!child) return { code: this.exitCode, signal: this.exitSignal };
    if (this.exitCode === null && this.exitSignal === null) {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill(signal);
      await exited;
    }
    if (this.sampler) clearInterval(this.sampler);
    return { code: this.exitCode, signal: this.exitSignal };
  }
}

export class Cluster {
  readonly replicas: Replica[] = [];
  readonly logDir: string;

  constructor(
    private readonly env: Record<string, string>,
    logDir = path.join(repoRoot, 'var', 'cluster-logs'),
  ) {
    this.logDir = logDir;
    mkdirSync(logDir, { recursive: true });
  }

  /** Compile the services unless `dist/` is already there and `rebuild` is false. */
  static build(rebuild = true): void {
    const built = ['identity', 'ledger', 'claims', 'referrals', 'webhooks', 'gateway'].every((s) =>
      existsSync(path.join(repoRoot, 'services', s, 'dist', 'main.js')),
    );
    if (built && !rebuild) return;
    const r = spawnSync(process.execPath, [path.join(repoRoot, 'scripts', 'build.mjs')], {
      cwd: repoRoot,
      stdio: 'inherit',
    });
    if (r.status !== 0) throw new Error('build failed');
  }

  /** Start `count` replicas of a service, one after the other (the first runs the migrations). */
  async add(service: ClusterService, count = 1, extraEnv: Record<string, string> = {}): Promise<Replica[]> {
    const started: Replica[] = [];
    for (let i = 0; i < count; i++) {
      const n = this.replicas.filter((r) => r.service === service).length + 1;
      const replica = new Replica(service, `${service}-${n}`, { ...this.env, ...extraEnv }, this.logDir);
      this.replicas.push(replica);
      await replica.start();
      started.push(replica);
    }
    return started;
  }

  of(service: ClusterService): Replica[] {
    return this.replicas.filter((r) => r.service === service);
  }

  /** Peak resident memory per service (the largest replica), in MB. */
  peakMemoryMb(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const r of this.replicas) out[r.service] = Math.max(out[r.service] ?? 0, r.peakRssMb());
    return out;
  }

  async stop(): Promise<void> {
    // Gateways first, so no new work reaches the services.
    const order = [...this.of('gateway'), ...this.replicas.filter((r) => r.service !== 'gateway')];
    for (const r of order) await r.signal('SIGTERM');
  }
}
