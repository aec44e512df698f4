import type { InjectedFault, PlannedFault } from './faults.ts';
import type { Check } from './invariants.ts';
import type { OpRecord } from './workload.ts';

/** Figures of a run, printed at the end and written (with the schedule) to soak/results/. */
export interface SoakReport {
  ok: boolean;
  seed: string;
  options: Record<string, unknown>;
  startedAt: string;
  loadSeconds: number;
  operations: Record<string, { attempted: number; acknowledged: number; refused: number; failed: number }>;
  totals: { attempted: number; acknowledged: number; refused: number; failed: number; shed: number; attempts: number };
  faults: { planned: PlannedFault[]; injected: InjectedFault[]; byKind: Record<string, number> };
  recovery: {
    seconds: { p50: number; p99: number; max: number };
    targetSeconds: number;
    perFault: { kind: string; target?: string; recoverySeconds: number | null }[];
  };
  latencyMs: { inFaultWindows: Percentiles; outsideFaultWindows: Percentiles };
  memory: { name: string; warmMb: number; endMb: number; growthPercent: number; restarted: boolean }[];
  checks: Check[];
  drainSeconds: number;
}

export interface Percentiles {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

export function percentiles(values: number[]): Percentiles {
  const s = [...values].sort((a, b) => a - b);
  return {
    count: s.length,
    p50: percentile(s, 50),
    p95: percentile(s, 95),
    p99: percentile(s, 99),
    max: s.at(-1) ?? 0,
  };
}

export function summarize(ops: OpRecord[]): SoakReport['operations'] {
  const out: SoakReport['operations'] = {};
  for (const o of ops) {
    if (o.kind === 'provision') continue;
    const k = (out[o.kind] ??= { attempted: 0, acknowledged: 0, refused: 0, failed: 0 });
    k.attempted += 1;
    if (o.outcome === 'ack') k.acknowledged += 1;
    else if (o.outcome === 'refused') k.refused += 1;
    else k.failed += 1;
  }
  return out;
}

const fmt = (n: number) => n.toLocaleString('en');

export function formatReport(r: SoakReport): string {
  const lines: string[] = [];
  lines.push(
    `SOAK ${r.ok ? 'PASSED' : 'FAILED'}  seed ${r.seed}, ${r.loadSeconds} s of load at ${String(r.options.rate)} ops/s`,
  );
  lines.push('');
  lines.push('operations              attempted  acknowledged  refused  failed');
  for (const [kind, o] of Object.entries(r.operations).sort())
    lines.push(
      `  ${kind.padEnd(20)} ${fmt(o.attempted).padStart(10)} ${fmt(o.acknowledged).padStart(13)} ${fmt(o.refused).padStart(8)} ${fmt(o.failed).padStart(7)}`,
    );
  const t = r.totals;
  lines.push(
    `  ${'all'.padEnd(20)} ${fmt(t.attempted).padStart(10)} ${fmt(t.acknowledged).padStart(13)} ${fmt(t.refused).padStart(8)} ${fmt(t.failed).padStart(7)}   (${fmt(t.attempts)} HTTP attempts; ${fmt(t.shed)} shed)`,
  );
  lines.push('');
  lines.push(
    `faults injected: ${
      Object.entries(r.faults.byKind)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || 'none'
    }`,
  );
  const rec = r.recovery.seconds;
  lines.push(
    `recovery after a fault (first answer of each kind): p50 ${rec.p50} s, p99 ${rec.p99} s, max ${rec.max} s (target p99 < ${r.recovery.targetSeconds} s)`,
  );
  const l = r.latencyMs;
  lines.push(
    `latency ms, outside fault windows: p50 ${l.outsideFaultWindows.p50}, p99 ${l.outsideFaultWindows.p99}, max ${l.outsideFaultWindows.max} (${fmt(l.outsideFaultWindows.count)})`,
  );
  lines.push(
    `latency ms, in fault windows:      p50 ${l.inFaultWindows.p50}, p99 ${l.inFaultWindows.p99}, max ${l.inFaultWindows.max} (${fmt(l.inFaultWindows.count)})`,
  );
  lines.push(
    `memory MB (after warm-up → end): ${r.memory
      .map((m) => `${m.name} ${m.warmMb}→${m.endMb}${m.restarted ? '*' : ''}`)
      .join(', ')}  (* restarted during the run)`,
  );
  lines.push(`drained in ${r.drainSeconds} s`);
  lines.push('');
  lines.push('invariants');
  for (const c of r.checks) {
    lines.push(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.figure}`);
    if (!c.ok && c.details?.length) lines.push(`       e.g. ${JSON.stringify(c.details.slice(0, 3))}`);
  }
  return lines.join('\n');
}
