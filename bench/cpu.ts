// CPU accounting: where a request's CPU goes, per process, read from /proc (user + system time).
// The full path's figure covers the measured run and the background work it left (outbox relay,
// consumers) until the event backlog is empty; the tuned direct figure covers the benchmark process
// and PostgreSQL. Dividing by the requests served gives CPU microseconds per request, and the
// machine's cores divided by that is the most requests a second the path can serve here.
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';

/** Clock ticks per second of /proc's times (USER_HZ: 100 on every Linux this runs on). */
const TICKS = 100;

/**
 * A process's CPU seconds; with `children`, also those of its children that exited and were
 * waited for (PostgreSQL's postmaster collects its backends' time when they exit).
 */
function procCpuSeconds(pid: number, children = false): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const f = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    // utime, stime, cutime, cstime: fields 14 to 17 of proc(5).
    return (f[11]! + f[12]! + (children ? f[13]! + f[14]! : 0)) / TICKS;
  } catch {
    return null;
  }
}

/**
 * Summed CPU seconds of every process whose command is one of `names`, the exited children they
 * collected included: a PostgreSQL backend that closes between two samples (an idle pool
 * connection timing out) moves its time into the postmaster's children's time, so the sum never
 * goes back.
 */
function cpuByCommand(names: string[]): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return out;
  }
  for (const pid of pids) {
    let comm: string;
    try {
      comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    if (comm in out) out[comm]! += procCpuSeconds(Number(pid), true) ?? 0;
  }
  return out;
}

export type CpuSample = Record<string, number>;

/**
 * Cumulative CPU seconds now: each service process, PostgreSQL (every backend and the ones that
 * exited), nats-server, Redis, and this process (the load generator and the direct baselines).
 */
export function sampleCpu(servicePids: Record<string, number>): CpuSample | null {
  if (os.platform() !== 'linux') return null;
  const sample: CpuSample = {};
  for (const [service, pid] of Object.entries(servicePids)) {
    const s = pid ? procCpuSeconds(pid) : null;
    if (s !== null) sample[service] = s;
  }
  const commands = cpuByCommand(['postgres', 'nats-server', 'redis-server']);
  sample.postgres = commands.postgres!;
  sample.nats = commands['nats-server']!;
  sample.redis = commands['redis-server']!;
  const own = process.cpuUsage();
  sample['bench (load generator)'] = (own.user + own.system) / 1e6;
  return sample;
}

/** CPU microseconds per request by process between two samples, largest first, with the total. */
export function cpuPerRequest(
  before: CpuSample | null,
  after: CpuSample | null,
  requests: number,
): Record<string, number> | null {
  if (!before || !after || requests <= 0) return null;
  const parts = Object.keys(after)
    .map((k) => [k, Math.max(0, ((after[k]! - (before[k] ?? 0)) * 1e6) / requests)] as const)
    .filter(([, us]) => us >= 0.5)
    .sort((a, b) => b[1] - a[1]);
  const total = parts.reduce((t, [, us]) => t + us, 0);
  return Object.fromEntries([['total', Math.round(total)], ...parts.map(([k, us]) => [k, Math.round(us)])]);
}

/** One line: "1,020 µs (gateway 310, ledger 250, ...)", and the cores' ceiling for that cost. */
export function formatCpu(cpu: Record<string, number>): string {
  const { total, ...parts } = cpu;
  const ceiling = total ? Math.round((os.cpus().length * 1e6) / total) : 0;
  return (
    `${total!.toLocaleString('en-US')} µs (` +
    Object.entries(parts)
      .map(([k, us]) => `${k} ${us}`)
      .join(', ') +
    `); ${os.cpus().length} cores at that cost: at most ${ceiling.toLocaleString('en-US')}/s`
  );
}
