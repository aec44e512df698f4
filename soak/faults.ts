import type { Replica } from '../test/support/cluster.ts';
import { Prng } from './prng.ts';
import { startPatiently, type SoakStack } from './stack.ts';

/**
 * The fault schedule (made from the seed before the run starts, so a seed reproduces it) and the
 * injector that plays it against the stack.
 */
export const FAULT_KINDS = [
  'kill',
  'stop',
  'nats_restart',
  'postgres_restart',
  'redis_restart',
  'postgres_latency',
  'postgres_cut',
  'nats_latency',
  'nats_cut',
  'webhook_500',
  'webhook_timeout',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Names `--faults` accepts besides the kinds themselves. */
const GROUPS: Record<string, FaultKind[]> = {
  all: [...FAULT_KINDS],
  processes: ['kill', 'stop'],
  restarts: ['nats_restart', 'postgres_restart', 'redis_restart'],
  proxy: ['postgres_latency', 'postgres_cut', 'nats_latency', 'nats_cut'],
  webhook: ['webhook_500', 'webhook_timeout'],
  none: [],
};

export function parseFaults(list: string): FaultKind[] {
  const out = new Set<FaultKind>();
  for (const name of list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const group = GROUPS[name];
    if (group) group.forEach((k) => out.add(k));
    else if ((FAULT_KINDS as readonly string[]).includes(name)) out.add(name as FaultKind);
    else throw new Error(`unknown fault "${name}"; one of: ${[...Object.keys(GROUPS), ...FAULT_KINDS].join(', ')}`);
  }
  return [...out];
}

export interface PlannedFault {
  /** Seconds from the start of the load. */
  at: number;
  kind: FaultKind;
  /** kill/stop: the replica's name (e.g. ledger-2); proxies: postgres or nats. */
  target?: string;
  /** How long the fault lasts (kill: until the restart begins), in ms. */
  durationMs: number;
  /** Latency faults: the added delay, in ms. */
  latencyMs?: number;
}

export interface InjectedFault extends PlannedFault {
  /** When it began and when the system was whole again (ms since the epoch). */
  startedAt: number;
  endedAt: number;
  error?: string;
}

export function planFaults(opts: {
  seed: string;
  seconds: number;
  kinds: FaultKind[];
  everySeconds: [number, number];
  replicaNames: string[];
}): PlannedFault[] {
  const rng = new Prng(`${opts.seed}:faults`);
  const plan: PlannedFault[] = [];
  if (opts.kinds.length === 0) return plan;
  // No fault in the last 10 s: the run ends on a whole system.
  for (let t = rng.between(...opts.everySeconds) / 2; t < opts.seconds - 10; t += rng.between(...opts.everySeconds)) {
    const kind = rng.pick(opts.kinds);
    const at = Math.round(t * 10) / 10;
    switch (kind) {
      case 'kill':
        plan.push({ at, kind, target: rng.pick(opts.replicaNames), durationMs: rng.int(1000, 3000) });
        break;
      case 'stop':
        plan.push({ at, kind, target: rng.pick(opts.replicaNames), durationMs: rng.int(2000, 6000) });
        break;
      case 'postgres_latency':
      case 'nats_latency':
        // Per chunk each way: a query's round trip costs twice this, a transaction several times.
        plan.push({ at, kind, durationMs: rng.int(2000, 6000), latencyMs: rng.int(20, 150) });
        break;
      case 'postgres_cut':
      case 'nats_cut':
        plan.push({ at, kind, durationMs: rng.int(1000, 3000) });
        break;
      case 'webhook_500':
      case 'webhook_timeout':
        plan.push({ at, kind, durationMs: rng.int(3000, 10000) });
        break;
      default:
        // Restarts: down for 1-3 s.
        plan.push({ at, kind, durationMs: rng.int(1000, 3000) });
    }
  }
  return plan;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function restartReplica(r: Replica): Promise<void> {
  // A replica that cannot start (e.g. its server is down at that moment) is tried again.
  for (let i = 0; ; i++) {
    try {
      await startPatiently(r, 60_000);
      return;
    } catch (err) {
      await r.signal('SIGKILL').catch(() => undefined);
      if (i >= 5) throw err;
      await sleep(2000);
    }
  }
}

/** Start a server again; a start that does not come up in time (a loaded machine) is tried again. */
async function startAgain(server: { start(): Promise<void>; stop(): Promise<void> }): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      await server.start();
      return;
    } catch (err) {
      if (i >= 4) throw err;
      await server.stop().catch(() => undefined);
      await sleep(1000);
    }
  }
}

async function apply(stack: SoakStack, f: PlannedFault): Promise<void> {
  const replica = () => {
    const r = stack.replicas.find((x) => x.name === f.target);
    if (!r) throw new Error(`no replica ${f.target}`);
    return r;
  };
  switch (f.kind) {
    case 'kill': {
      const r = replica();
      await r.signal('SIGKILL');
      await sleep(f.durationMs);
      await restartReplica(r);
      return;
    }
    case 'stop': {
      const pid = replica().pid;
      if (!pid) return;
      process.kill(pid, 'SIGSTOP');
      await sleep(f.durationMs);
      process.kill(pid, 'SIGCONT');
      return;
    }
    case 'nats_restart':
      await stack.nats.stop('SIGTERM');
      await sleep(f.durationMs);
      await startAgain(stack.nats);
      return;
    case 'postgres_restart':
      await stack.postgres.stop('fast');
      await sleep(f.durationMs);
      await startAgain(stack.postgres);
      return;
    case 'redis_restart':
      await stack.redis.stop('SIGTERM');
      await sleep(f.durationMs);
      await startAgain(stack.redis);
      return;
    case 'postgres_latency':
    case 'nats_latency': {
      const proxy = f.kind === 'postgres_latency' ? stack.pgProxy : stack.natsProxy;
      proxy.setLatency(f.latencyMs ?? 100);
      await sleep(f.durationMs);
      proxy.restore();
      return;
    }
    case 'postgres_cut':
    case 'nats_cut': {
      const proxy = f.kind === 'postgres_cut' ? stack.pgProxy : stack.natsProxy;
      proxy.cutAll();
      await sleep(f.durationMs);
      proxy.restore();
      return;
    }
    case 'webhook_500':
    case 'webhook_timeout':
      stack.receiver.respond(() => (f.kind === 'webhook_500' ? { status: 500 } : { hang: true }));
      await sleep(f.durationMs);
      stack.receiver.respond(() => ({ status: 200 }));
      return;
  }
}

/** Plays the schedule from `t0`, one fault at a time (a late one waits for the one before it). */
export async function injectFaults(
  stack: SoakStack,
  plan: PlannedFault[],
  t0: number,
  done: InjectedFault[],
  log: (line: string) => void,
  stopped: () => boolean,
): Promise<void> {
  for (const f of plan) {
    const wait = t0 + f.at * 1000 - Date.now();
    if (wait > 0) await sleep(wait);
    if (stopped()) return;
    const startedAt = Date.now();
    const what = `${f.kind}${f.target ? ` ${f.target}` : ''}${f.latencyMs ? ` +${f.latencyMs} ms` : ''} for ${(f.durationMs / 1000).toFixed(1)} s`;
    log(`fault: ${what}`);
    const injected: InjectedFault = { ...f, startedAt, endedAt: startedAt };
    done.push(injected);
    try {
      await apply(stack, f);
    } catch (err) {
      injected.error = err instanceof Error ? err.message : String(err);
      log(`fault ${f.kind} failed: ${injected.error}`);
    }
    injected.endedAt = Date.now();
  }
}
