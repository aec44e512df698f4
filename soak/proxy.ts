import net from 'node:net';

/**
 * A TCP proxy on loopback between the services and PostgreSQL or NATS, so the soak can add
 * latency to every byte or cut every connection for a while without touching the server itself.
 */
export class FaultProxy {
  port = 0;
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private latencyMs = 0;
  private cut = false;
  /** Connections opened through the proxy, and how many a cut closed. */
  readonly stats = { connections: 0, cutConnections: 0 };

  constructor(
    readonly name: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    this.server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  private accept(client: net.Socket): void {
    if (this.cut) {
      client.destroy();
      return;
    }
    this.stats.connections += 1;
    const upstream = net.connect({ host: '127.0.0.1', port: this.targetPort });
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.setNoDelay(true);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
    }
    const pipe = (from: net.Socket, to: net.Socket) => {
      // Chunks leave in order: never before the one ahead of them, even when the latency drops.
      let lastDue = 0;
      const send = (fn: () => void) => {
        const due = Math.max(Date.now() + this.latencyMs, lastDue);
        lastDue = due;
        const wait = due - Date.now();
        if (wait > 0) setTimeout(fn, wait);
        else fn();
      };
      from.on('data', (chunk: Buffer) => send(() => to.destroyed || to.write(chunk)));
      from.on('close', () => send(() => to.destroy()));
    };
    pipe(client, upstream);
    pipe(upstream, client);
  }

  /** Every byte in either direction waits `ms` (0: none). */
  setLatency(ms: number): void {
    this.latencyMs = ms;
  }

  /** Close every connection and refuse new ones until `restore()`. */
  cutAll(): void {
    this.cut = true;
    for (const s of this.sockets) {
      this.stats.cutConnections += 1;
      s.destroy();
    }
  }

  restore(): void {
    this.cut = false;
    this.latencyMs = 0;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** What the soak asks of the proxy process. */
export type ProxyCommand =
  | { cmd: 'latency'; name: string; ms: number }
  | { cmd: 'cut'; name: string }
  | { cmd: 'restore'; name: string }
  | { cmd: 'stats' };

/** The proxies' process, seen from the soak: one handle per proxied server. */
export interface ProxyHandle {
  port: number;
  setLatency(ms: number): void;
  cutAll(): void;
  restore(): void;
}

export async function startProxyProcess(
  targets: Record<string, number>,
): Promise<{ proxies: Record<string, ProxyHandle>; stop: () => Promise<void> }> {
  const { fork } = await import('node:child_process');
  const child = fork(
    new URL('./proxy-process.ts', import.meta.url).pathname,
    Object.entries(targets).map(([n, p]) => `${n}=${p}`),
    {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  const ports = await new Promise<Record<string, number>>((resolve, reject) => {
    child.once('message', (m: { ports: Record<string, number> }) => resolve(m.ports));
    child.once('exit', (code) => reject(new Error(`the proxy process exited (${code})`)));
  });
  const send = (m: ProxyCommand) => child.connected && child.send(m);
  const proxies: Record<string, ProxyHandle> = {};
  for (const [name, port] of Object.entries(ports))
    proxies[name] = {
      port,
      setLatency: (ms) => send({ cmd: 'latency', name, ms }),
      cutAll: () => send({ cmd: 'cut', name }),
      restore: () => send({ cmd: 'restore', name }),
    };
  return {
    proxies,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
