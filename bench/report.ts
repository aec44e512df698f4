// The report: a table on stdout, bench/results/latest.json, and a chart (SVG, plus PNG rendered
// by @resvg/resvg-js) of throughput and p99 per scenario, full path beside the baseline.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Measured } from './load.ts';
import type { TracingReport } from './tracing-cost.ts';
import type { EarnTurnsReport } from './earn-turns.ts';
import type { MailRenderReport } from './mail-render.ts';
import type { TierRecomputeReport } from './tier-recompute.ts';
import type { WebhooksReport } from './webhooks.ts';
import { formatTargets, type TargetCheck } from './targets.ts';
import { formatCpu } from './cpu.ts';

export interface ScenarioReport {
  name: string;
  description: string;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
  expected_refusals: number;
  statuses: Record<string, number>;
  baseline_rps: number | null;
  baseline_p50_ms: number | null;
  baseline_p99_ms: number | null;
  baseline_errors: number | null;
  /** Full-path rps / baseline rps. */
  ratio: number | null;
  /** The tuned services' own statements issued directly (bench/baseline-tuned.ts): the database's limit for the very same SQL. */
  tuned_baseline_rps: number | null;
  tuned_baseline_p99_ms: number | null;
  /** Full-path rps / tuned_baseline_rps. */
  tuned_ratio: number | null;
  target_ratio: number;
  checks: string[];
  /**
   * CPU microseconds per request by process (bench/cpu.ts), with `total`: the full path (its run
   * and the background work it left) and the tuned statements direct (this process and PostgreSQL).
   */
  cpu_us_per_request: { full: Record<string, number> | null; tuned: Record<string, number> | null };
  /** The full path's CPU per request ÷ the tuned statements' (both totals over every process), when both were measured. */
  cpu_ratio_to_tuned: number | null;
  /** A second run at a fixed offered rate (`--steady-rps`; the earns only): latency at a steady load. */
  steady: SteadyFigure | null;
}

export interface SteadyFigure {
  offered_rps: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
}

export interface GrowthFigure {
  p50_ms: number;
  p99_ms: number;
}

export interface GrowthReport {
  rows_small: number;
  rows_large: number;
  requests_each: number;
  balance: { small: GrowthFigure; large: GrowthFigure; ratio_p50: number };
  history: { small: GrowthFigure; large: GrowthFigure; ratio_p50: number };
  seed_seconds: number;
}

export type { ExpiryReport } from './expiry.ts';
export type { ImportsReport } from './imports.ts';
import type { ImportsReport } from './imports.ts';
import { formatExports, type ExportsReport } from './exports.ts';
import type { ExpiryReport } from './expiry.ts';

export interface BenchReport {
  generated_at: string;
  machine: {
    cpus: number;
    cpu_model: string;
    load_average_before: number[];
    node: string;
    /** Milliseconds of a fixed JavaScript loop on one core before the run (run.ts `cpuCalibration`): this VM's speed drifts between runs. */
    cpu_calibration_ms: number;
  };
  system: string;
  options: { duration_s: number; warmup_s: number; connections: number };
  scenarios: ScenarioReport[];
  memory_mb: Record<string, number>;
  growth: GrowthReport | { skipped: string };
  /** The ledger's lot sweep with many lots due at once (bench/expiry.ts). */
  expiry: ExpiryReport | { skipped: string };
  /** The webhooks scenario (bench/webhooks.ts). */
  webhooks: WebhooksReport | { skipped: string };
  /** Members and balances imported through the operator API (bench/imports.ts). */
  imports?: ImportsReport | { skipped: string };
  /** The journal exported through the gateway, and the report's latency on it (bench/exports.ts). */
  exports?: ExportsReport | { skipped: string };
  /** The points earn on a second system with tracing on (bench/tracing-cost.ts). */
  tracing?: TracingReport | { skipped: string };
  /** The rules and tiers earns in turns with the plain earn (bench/earn-turns.ts). */
  earn_turns?: EarnTurnsReport | { skipped: string };
  /** The tier recompute job over the tiers card's members (bench/tier-recompute.ts). */
  tier_recompute?: TierRecomputeReport | { skipped: string };
  mail_render?: MailRenderReport | { skipped: string };
  /** Seconds waited after each phase until every event was published and consumed (null: unknown). */
  event_backlog_wait_s: Record<string, number | null>;
  /** points_earned notifications identity had not mailed yet when the measurements ended. */
  notification_mail_backlog_at_end: number | null;
  targets: Record<string, string>;
  problems: string[];
  /** The speed targets judged against this run (bench/targets.ts). */
  target_checks: TargetCheck[];
}

export function scenarioReport(
  name: string,
  description: string,
  full: Measured,
  base: Measured | null,
  tuned: Measured | null,
  targetRatio: number,
  checks: string[],
  cpu: ScenarioReport['cpu_us_per_request'] = { full: null, tuned: null },
  steady: SteadyFigure | null = null,
): ScenarioReport {
  const fullCpu = cpu.full?.total;
  const tunedCpu = cpu.tuned?.total;
  return {
    name,
    description,
    rps: full.rps,
    p50_ms: full.p50_ms,
    p99_ms: full.p99_ms,
    errors: full.errors,
    expected_refusals: full.expected_refusals,
    statuses: full.statuses,
    baseline_rps: base?.rps ?? null,
    baseline_p50_ms: base?.p50_ms ?? null,
    baseline_p99_ms: base?.p99_ms ?? null,
    baseline_errors: base?.errors ?? null,
    ratio: base && base.rps > 0 ? Math.round((full.rps / base.rps) * 100) / 100 : null,
    tuned_baseline_rps: tuned?.rps ?? null,
    tuned_baseline_p99_ms: tuned?.p99_ms ?? null,
    tuned_ratio: tuned && tuned.rps > 0 ? Math.round((full.rps / tuned.rps) * 100) / 100 : null,
    target_ratio: targetRatio,
    checks,
    cpu_us_per_request: cpu,
    cpu_ratio_to_tuned: fullCpu && tunedCpu ? Math.round((fullCpu / tunedCpu) * 100) / 100 : null,
    steady,
  };
}

const pad = (s: string, n: number, right = false) => (right ? s.padStart(n) : s.padEnd(n));
const fmt = (v: number | null | undefined, d = 1) =>
  v === null || v === undefined || Number.isNaN(v) ? '-' : v.toFixed(d);

export function formatTable(r: BenchReport): string {
  const head = [
    'scenario',
    'rps',
    'p50 ms',
    'p99 ms',
    'errors',
    '422s',
    'base rps',
    'base p50',
    'base p99',
    'ratio',
    'target',
    'tuned rps',
    'tuned ratio',
  ];
  const widths = [16, 8, 7, 7, 6, 6, 9, 8, 8, 6, 7, 9, 11];
  const line = (cells: string[]) => cells.map((c, i) => pad(c, widths[i]!, i > 0)).join('  ');
  const out = [line(head), widths.map((w) => '-'.repeat(w)).join('  ')];
  for (const s of r.scenarios) {
    out.push(
      line([
        s.name,
        fmt(s.rps, 0),
        fmt(s.p50_ms, 2),
        fmt(s.p99_ms, 2),
        String(s.errors),
        String(s.expected_refusals),
        fmt(s.baseline_rps, 0),
        fmt(s.baseline_p50_ms, 2),
        fmt(s.baseline_p99_ms, 2),
        s.ratio === null ? '-' : `${s.ratio.toFixed(2)}x`,
        `>=${s.target_ratio}x`,
        fmt(s.tuned_baseline_rps, 0),
        s.tuned_ratio === null ? '-' : `${s.tuned_ratio.toFixed(2)}x`,
      ]),
    );
  }
  out.push(
    "base: the naive direct baseline (bench/baseline.ts); tuned: the services' own statements, direct (bench/baseline-tuned.ts)",
  );
  const withCpu = r.scenarios.filter((s) => s.cpu_us_per_request.full);
  if (withCpu.length > 0) {
    out.push('', 'CPU per request, by process (user + system time from /proc; bench/cpu.ts):');
    for (const s of withCpu) {
      out.push(`  ${s.name} full path: ${formatCpu(s.cpu_us_per_request.full!)}`);
      if (s.cpu_us_per_request.tuned)
        out.push(`  ${' '.repeat(s.name.length)} tuned direct: ${formatCpu(s.cpu_us_per_request.tuned)}`);
      if (s.cpu_ratio_to_tuned !== null)
        out.push(`  ${' '.repeat(s.name.length)} full path ÷ tuned: ${s.cpu_ratio_to_tuned.toFixed(2)}x`);
    }
  }
  const steady = r.scenarios.filter((s) => s.steady);
  if (steady.length > 0) {
    out.push('', 'Latency at a steady offered rate (--steady-rps):');
    for (const { name, steady: f } of steady)
      out.push(
        `  ${name}: offered ${f!.offered_rps} rps, answered ${fmt(f!.rps, 0)} rps, p50 ${fmt(f!.p50_ms, 2)} ms, p99 ${fmt(f!.p99_ms, 2)} ms, ${f!.errors} errors`,
      );
  }
  out.push('');
  out.push(
    `peak RSS (MB): ${Object.entries(r.memory_mb)
      .map(([k, v]) => `${k} ${v.toFixed(0)}`)
      .join(', ')}`,
  );
  if ('balance' in r.growth) {
    const g = r.growth;
    out.push(
      `growth ${g.rows_small.toLocaleString('en-US')} -> ${g.rows_large.toLocaleString('en-US')} journal rows (p50, one connection): ` +
        `balance ${fmt(g.balance.small.p50_ms, 2)} -> ${fmt(g.balance.large.p50_ms, 2)} ms (${g.balance.ratio_p50.toFixed(2)}x), ` +
        `history ${fmt(g.history.small.p50_ms, 2)} -> ${fmt(g.history.large.p50_ms, 2)} ms (${g.history.ratio_p50.toFixed(2)}x)`,
    );
  } else {
    out.push(`growth: skipped (${r.growth.skipped})`);
  }
  out.push(
    'lots_per_second' in r.expiry
      ? `expiry: ${r.expiry.lots_per_second.toLocaleString('en-US')} lots/s (${r.expiry.lots.toLocaleString('en-US')} lots due on ${r.expiry.accounts.toLocaleString('en-US')} accounts, expired in ${r.expiry.seconds} s by the ledger's sweep; ${r.expiry.events.toLocaleString('en-US')} events)`
      : `expiry: skipped (${r.expiry.skipped})`,
  );
  if (r.imports && 'phases' in r.imports) {
    const i = r.imports;
    out.push(
      `imports: ${i.rows.toLocaleString('en-US')} members + ${i.rows.toLocaleString('en-US')} balance lines in ${fmt(i.total_s, 1)} s = ` +
        `${i.rows_per_second.toLocaleString('en-US')} rows/s (` +
        i.phases
          .map(
            (p) =>
              `${p.kind} ${p.rows_per_second.toLocaleString('en-US')} rows/s: upload ${fmt(p.upload_s, 1)} s, validate ${fmt(p.validate_s, 1)} s, execute ${fmt(p.execute_s, 1)} s`,
          )
          .join('; ') +
        `); peak RSS during the imports (MB): ${Object.entries(i.memory_mb)
          .map(([k, v]) => `${k} ${v.toFixed(0)}`)
          .join(', ')}`,
    );
  } else if (r.imports) out.push(`imports: skipped (${r.imports.skipped})`);
  if (r.exports && 'exports' in r.exports) out.push(formatExports(r.exports));
  else if (r.exports) out.push(`exports: skipped (${r.exports.skipped})`);
  if ('steady' in r.webhooks) {
    const w = r.webhooks;
    const t = w.targets;
    out.push(
      `webhooks, one endpoint, healthy local receiver: steady ${w.steady.earns_per_s} earns/s (target ${t.rate_per_s}) -> ` +
        `${w.steady.deliveries_per_s} deliveries/s, event to delivery p50 ${fmt(w.steady.p50_ms, 1)} ms, p99 ${fmt(w.steady.p99_ms, 1)} ms ` +
        `(target p99 < ${t.p99_ms} ms), ${w.steady.missing} missing, ${w.steady.duplicates} twice`,
    );
    out.push(
      'skipped' in w.capacity
        ? `webhooks capacity: skipped (${w.capacity.skipped})`
        : `webhooks capacity, one replica draining a backlog for 2 endpoints: ${w.capacity.deliveries} deliveries of ${w.capacity.events} events in ${fmt(w.capacity.seconds, 2)} s = ` +
            `${fmt(w.capacity.deliveries_per_s, 0)} deliveries/s (target >= ${t.deliveries_per_s}), ${w.capacity.missing} missing`,
    );
  } else {
    out.push(`webhooks: skipped (${r.webhooks.skipped})`);
  }
  if (r.earn_turns && 'figures' in r.earn_turns) {
    for (const [name, f] of Object.entries(r.earn_turns.figures))
      out.push(
        `${name} in turns with points_earn (${r.earn_turns.rounds} rounds of ${r.earn_turns.seconds} s): ${f.rps} rps vs ${f.plain_rps} rps = ${f.ratio}x ` +
          `(plain/${name} by turn: ${f.turns.map((t) => `${t.plain_rps}/${t.rps}`).join(', ')}; CPU per request ${f.cpu_us.plain ?? '-'} / ${f.cpu_us.scenario ?? '-'} µs)`,
      );
  } else if (r.earn_turns) out.push(`earns in turns: skipped (${r.earn_turns.skipped})`);
  if (r.tracing && 'ratio' in r.tracing) {
    const t = r.tracing;
    out.push(
      `tracing on (${fmt(t.sampling * 100, 0)} % of new traces sampled, spans exported to a local OTLP receiver): points_earn ${t.rps} rps (p99 ${fmt(t.p99_ms, 1)} ms) vs ${t.plain_rps} rps off = ${t.ratio}x` +
        `${t.rounds ? ` (off/on by turn: ${t.rounds.map((r) => `${r.off_rps}/${r.on_rps}`).join(', ')}; load average ${t.load_average[0]} -> ${t.load_average[1]})` : ''}` +
        `${t.services_cpu_us ? `; the services' CPU per request off/on: ${t.services_cpu_us.off ?? '-'}/${t.services_cpu_us.on ?? '-'} µs` : ''}; ${t.exports.requests} exports, ${Math.round(t.exports.bytes / 1024)} KB`,
    );
    if (t.cpu_us_by_process)
      out.push(
        `  by process, µs per request off/on: ${Object.entries(t.cpu_us_by_process)
          .map(([p, c]) => `${p} ${c.off ?? '-'}/${c.on ?? '-'}`)
          .join(', ')}`,
      );
  } else if (r.tracing) out.push(`tracing: skipped (${r.tracing.skipped})`);
  if (r.tier_recompute && 'members_per_second' in r.tier_recompute) {
    const t = r.tier_recompute;
    out.push(
      `tier recompute: ${t.members_per_second.toLocaleString('en-US')} members/s (${t.members.toLocaleString('en-US')} members in ${t.seconds} s; ` +
        `1,000,000 in ${t.seconds_per_million} s, target <= ${t.target_seconds_per_million} s); earns on the card meanwhile ` +
        `${t.earns.rps} rps of ${t.earns.offered_per_s} offered, worst p99 ${fmt(t.earns.worst_p99_ms, 1)} ms, ${t.earns.errors} errors`,
    );
  } else if (r.tier_recompute) out.push(`tier recompute: skipped (${r.tier_recompute.skipped})`);
  if (r.mail_render && 'render_us_per_mail' in r.mail_render) {
    const m = r.mail_render;
    out.push(
      `mail rendering: ${m.render_us_per_mail} µs a mail; at most ${m.mails_per_second} digests/s for ${m.earn_rps} earns/s ` +
        `(${m.earn_cpu_us} µs of CPU each) = ${fmt(m.share_of_earn_cpu * 100, 2)} % of the earns' CPU (target <= ${m.target_share * 100} %)`,
    );
  } else if (r.mail_render) out.push(`mail rendering: skipped (${r.mail_render.skipped})`);
  if (r.notification_mail_backlog_at_end)
    out.push(
      `notification mails not yet sent at the end: ${r.notification_mail_backlog_at_end} (points-earned mails are one digest per member a minute; see bench/README.md)`,
    );
  out.push(
    r.problems.length === 0 ? 'checks: no unexpected errors, no overdraft' : `PROBLEMS:\n  ${r.problems.join('\n  ')}`,
  );
  if (r.target_checks.length > 0) out.push('', formatTargets(r.target_checks));
  return out.join('\n');
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Two panels of horizontal bars: throughput and p99, the full path beside the baseline. */
export function chartSvg(r: BenchReport): string {
  const W = 1000;
  const rowH = 70;
  const top = 136;
  const labelW = 235;
  const panelW = (W - labelW - 60) / 2;
  const H = top + r.scenarios.length * rowH + 110;
  const FULL = '#2563eb';
  const BASE = '#9ca3af';
  const TUNED = '#e5e7eb';
  const el: string[] = [];
  el.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="DejaVu Sans, Arial, Helvetica, sans-serif">`,
  );
  el.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  el.push(
    `<text x="20" y="30" font-size="19" font-weight="bold">Loyalty platform: full microservice path vs. direct SQL baseline</text>`,
  );
  el.push(
    `<text x="20" y="52" font-size="12" fill="#374151">${esc(`${r.options.connections} connections, ${r.options.duration_s} s per run, ${r.machine.cpus} CPUs (load generator included), load average before ${r.machine.load_average_before[0]}, CPU calibration ${r.machine.cpu_calibration_ms} ms, ${r.generated_at.slice(0, 19)}Z`)}</text>`,
  );
  // legend
  el.push(
    `<rect x="20" y="66" width="14" height="14" fill="${FULL}"/><text x="40" y="78" font-size="12">full path (HTTP, gateway, NATS, service, PostgreSQL)</text>`,
  );
  el.push(
    `<rect x="400" y="66" width="14" height="14" fill="${BASE}"/><text x="420" y="78" font-size="12">baseline (naive: each operation's SQL from one process)</text>`,
  );
  el.push(
    `<rect x="20" y="86" width="14" height="14" fill="${TUNED}" stroke="#9ca3af"/><text x="40" y="98" font-size="12">the tuned services' own statements, direct (database limit for the same SQL)</text>`,
  );

  const panels = [
    {
      title: 'Throughput (requests/s, higher is better)',
      x: labelW + 20,
      full: (s: ScenarioReport) => s.rps,
      base: (s: ScenarioReport) => s.baseline_rps,
      tuned: (s: ScenarioReport) => s.tuned_baseline_rps,
      unit: '',
      target: null as number | null,
    },
    {
      title: 'p99 latency (ms, lower is better)',
      x: labelW + 40 + panelW,
      full: (s: ScenarioReport) => s.p99_ms,
      base: (s: ScenarioReport) => s.baseline_p99_ms,
      tuned: (s: ScenarioReport) => s.tuned_baseline_p99_ms,
      unit: ' ms',
      target: 50,
    },
  ];
  for (const p of panels) {
    const values = r.scenarios
      .flatMap((s) => [p.full(s), p.base(s) ?? 0, p.tuned(s) ?? 0])
      .filter((v) => Number.isFinite(v));
    const max = Math.max(1, ...values, p.target ?? 0) * 1.18;
    const scale = (v: number) => (Math.max(0, v) / max) * (panelW - 10);
    el.push(`<text x="${p.x}" y="${top - 12}" font-size="13" font-weight="bold">${esc(p.title)}</text>`);
    el.push(`<line x1="${p.x}" y1="${top - 4}" x2="${p.x}" y2="${top + r.scenarios.length * rowH}" stroke="#111827"/>`);
    if (p.target !== null) {
      const x = p.x + scale(p.target);
      el.push(
        `<line x1="${x}" y1="${top - 4}" x2="${x}" y2="${top + r.scenarios.length * rowH}" stroke="#dc2626" stroke-dasharray="4 3"/>`,
      );
      el.push(
        `<text x="${x + 3}" y="${top + r.scenarios.length * rowH + 14}" font-size="11" fill="#dc2626">earn target ${p.target} ms</text>`,
      );
    }
    r.scenarios.forEach((s, i) => {
      const y = top + i * rowH + 8;
      const f = p.full(s);
      const b = p.base(s);
      el.push(`<rect x="${p.x}" y="${y}" width="${scale(f)}" height="17" fill="${FULL}"/>`);
      el.push(
        `<text x="${p.x + scale(f) + 4}" y="${y + 13}" font-size="11">${esc(`${f.toFixed(p.unit ? 1 : 0)}${p.unit}`)}</text>`,
      );
      if (b !== null) {
        el.push(`<rect x="${p.x}" y="${y + 20}" width="${scale(b)}" height="17" fill="${BASE}"/>`);
        el.push(
          `<text x="${p.x + scale(b) + 4}" y="${y + 33}" font-size="11" fill="#374151">${esc(`${b.toFixed(p.unit ? 1 : 0)}${p.unit}`)}</text>`,
        );
      }
      const t = p.tuned(s);
      if (t !== null) {
        el.push(
          `<rect x="${p.x}" y="${y + 40}" width="${scale(t)}" height="17" fill="${TUNED}" stroke="#9ca3af" stroke-width="0.5"/>`,
        );
        el.push(
          `<text x="${p.x + scale(t) + 4}" y="${y + 53}" font-size="11" fill="#6b7280">${esc(`${t.toFixed(p.unit ? 1 : 0)}${p.unit}`)}</text>`,
        );
      }
    });
  }
  r.scenarios.forEach((s, i) => {
    const y = top + i * rowH + 8;
    el.push(`<text x="20" y="${y + 15}" font-size="13" font-weight="bold">${esc(s.name)}</text>`);
    const ratio = s.ratio === null ? 'no baseline' : `${s.ratio.toFixed(2)}x of baseline`;
    const ok = s.ratio === null || s.ratio >= s.target_ratio;
    el.push(
      `<text x="20" y="${y + 32}" font-size="11" fill="${ok ? '#15803d' : '#b91c1c'}">${esc(`${ratio} (target ${s.target_ratio}x)`)}</text>`,
    );
    if (s.tuned_ratio !== null)
      el.push(
        `<text x="20" y="${y + 47}" font-size="11" fill="#6b7280">${esc(`${s.tuned_ratio.toFixed(2)}x of the tuned statements direct`)}</text>`,
      );
    if (s.errors > 0)
      el.push(`<text x="20" y="${y + 62}" font-size="11" fill="#b91c1c">${esc(`${s.errors} errors`)}</text>`);
  });
  let y = top + r.scenarios.length * rowH + 40;
  const mem = Object.entries(r.memory_mb)
    .map(([k, v]) => `${k} ${v.toFixed(0)}`)
    .join(' · ');
  const memOver = Object.values(r.memory_mb).some((v) => v > 150);
  el.push(
    `<text x="20" y="${y}" font-size="12" fill="${memOver ? '#b91c1c' : '#111827'}">${esc(`Peak RSS per service (MB, target 150): ${mem}`)}</text>`,
  );
  y += 20;
  if ('balance' in r.growth) {
    const g = r.growth;
    const growthOver = g.balance.ratio_p50 > 1.5 || g.history.ratio_p50 > 1.5;
    el.push(
      `<text x="20" y="${y}" font-size="12" fill="${growthOver ? '#b91c1c' : '#111827'}">${esc(
        `Growth ${g.rows_small.toLocaleString('en-US')} -> ${g.rows_large.toLocaleString('en-US')} journal rows (p50, target 1.5x): balance ${g.balance.small.p50_ms.toFixed(2)} -> ${g.balance.large.p50_ms.toFixed(2)} ms (${g.balance.ratio_p50.toFixed(2)}x), history ${g.history.small.p50_ms.toFixed(2)} -> ${g.history.large.p50_ms.toFixed(2)} ms (${g.history.ratio_p50.toFixed(2)}x)`,
      )}</text>`,
    );
  } else {
    el.push(`<text x="20" y="${y}" font-size="12">${esc(`Growth: skipped (${r.growth.skipped})`)}</text>`);
  }
  y += 20;
  el.push(
    `<text x="20" y="${y}" font-size="12" fill="${r.problems.length ? '#b91c1c' : '#15803d'}">${esc(r.problems.length ? `Problems: ${r.problems.join('; ').slice(0, 150)}` : 'No unexpected errors, no overdraft')}</text>`,
  );
  el.push('</svg>');
  return el.join('\n');
}

/** Write latest.json and latest.svg (and latest.png when the renderer loads); returns the paths written. */
export async function writeReport(r: BenchReport, dir: string): Promise<string[]> {
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  const jsonPath = path.join(dir, 'latest.json');
  writeFileSync(jsonPath, `${JSON.stringify(r, null, 2)}\n`);
  written.push(jsonPath);
  const svg = chartSvg(r);
  const svgPath = path.join(dir, 'latest.svg');
  writeFileSync(svgPath, svg);
  written.push(svgPath);
  try {
    const { Resvg } = await import('@resvg/resvg-js');
    const png = new Resvg(svg, {
      font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' },
      fitTo: { mode: 'width', value: 1400 },
    })
      .render()
      .asPng();
    const pngPath = path.join(dir, 'latest.png');
    writeFileSync(pngPath, png);
    written.push(pngPath);
  } catch (err) {
    console.warn(`PNG not written (${(err as Error).message}); the SVG has the same chart`);
  }
  return written;
}
