// The speed targets, each judged against the same run's own baselines, printed beside the
// figures and kept in latest.json: the third round's (throughput ratios, latency at saturation)
// and the fourth round's (CPU per request of the whole path ÷ the tuned statements', latency at
// a steady offered rate, throughput kept).
import type { BenchReport } from './report.ts';
import type { ScenarioName } from './options.ts';

export interface TargetCheck {
  target: string;
  figure: string;
  /** null: not measured in this run (a scenario or figure was left out). */
  met: boolean | null;
}

export const TARGETS = {
  earnTunedRatio: 0.4,
  rulesEarnRatio: 0.85,
  tiersEarnRatio: 0.85,
  tierRecomputeSecondsPerMillion: 120,
  earnP99Ms: 25,
  balanceTunedRatio: 0.35,
  historyTunedRatio: 0.45,
  redeemNaiveRatio: 1.0,
  redeemP99Ms: 60,
  peakRssMb: 100,
  growthRows: 10_000_000,
  growthRatio: 1.5,
  tracingRatio: 0.95,
  importSeconds: 180,
  importRssMb: 150,
  exportRowsPerSecond: 100_000,
} as const;

/** The fourth speed round: CPU per request of the whole path (every process) ÷ the tuned statements' (bench/baseline-tuned.ts). */
export const CPU_TARGETS = {
  cpuRatio: {
    points_earn: 4,
    cashback_earn: 4,
    points_balance: 3,
    points_history: 3,
    cashback_redeem: 1.3,
    points_earn_rules: 5,
    points_earn_tiers: 5,
  },
  steadyRps: 1000,
  steadyP99Ms: 15,
  earnTunedRatio: 0.35,
} as const;

const x = (v: number | null | undefined) => (v === null || v === undefined ? '-' : `${v.toFixed(2)}x`);
const ms = (v: number) => `${v.toFixed(1)} ms`;

/** Judge a report (without its `target_checks`) against the targets. */
export function checkTargets(r: Omit<BenchReport, 'target_checks'>, membersWhoEarned: number | null): TargetCheck[] {
  const out: TargetCheck[] = [];
  const scenario = (name: string) => r.scenarios.find((s) => s.name === name);
  for (const name of ['points_earn', 'cashback_earn']) {
    const s = scenario(name);
    out.push({
      target: `${name} >= ${TARGETS.earnTunedRatio}x tuned statements direct, p99 <= ${TARGETS.earnP99Ms} ms`,
      figure: s ? `${x(s.tuned_ratio)}, p99 ${ms(s.p99_ms)}` : 'not run',
      met:
        s && s.tuned_ratio !== null ? s.tuned_ratio >= TARGETS.earnTunedRatio && s.p99_ms <= TARGETS.earnP99Ms : null,
    });
  }
  out.push(
    earnRatio(r, 'points_earn_rules', '(25 rules, 20 lines)', TARGETS.rulesEarnRatio),
    earnRatio(r, 'points_earn_tiers', '(tiers and tier rules)', TARGETS.tiersEarnRatio),
  );
  const recompute = r.tier_recompute && 'members_per_second' in r.tier_recompute ? r.tier_recompute : undefined;
  out.push({
    target: `tier recompute: 1,000,000 members in <= ${TARGETS.tierRecomputeSecondsPerMillion} s, earns served meanwhile`,
    figure: recompute
      ? `${recompute.members_per_second.toLocaleString('en-US')} members/s (1,000,000 in ${recompute.seconds_per_million} s), earns meanwhile ${recompute.earns.rps} rps, ${recompute.earns.errors} errors`
      : 'not run',
    // Fewer members than the target's (a smoke run) are a figure, not a verdict.
    met:
      recompute && recompute.members >= 1_000_000
        ? recompute.seconds <= TARGETS.tierRecomputeSecondsPerMillion * (recompute.members / 1_000_000) &&
          recompute.earns.errors === 0 &&
          recompute.earns.requests > 0
        : null,
  });
  for (const [name, ratio] of [
    ['points_balance', TARGETS.balanceTunedRatio],
    ['points_history', TARGETS.historyTunedRatio],
  ] as const) {
    const s = scenario(name);
    out.push({
      target: `${name} >= ${ratio}x tuned statements direct`,
      figure: s ? x(s.tuned_ratio) : 'not run',
      met: s && s.tuned_ratio !== null ? s.tuned_ratio >= ratio : null,
    });
  }
  const redeem = scenario('cashback_redeem');
  out.push({
    target: `cashback_redeem (member token) >= ${TARGETS.redeemNaiveRatio}x naive baseline, p99 <= ${TARGETS.redeemP99Ms} ms`,
    figure: redeem ? `${x(redeem.ratio)}, p99 ${ms(redeem.p99_ms)}` : 'not run',
    met:
      redeem && redeem.ratio !== null
        ? redeem.ratio >= TARGETS.redeemNaiveRatio && redeem.p99_ms <= TARGETS.redeemP99Ms
        : null,
  });
  out.push(...fourthRound(r));
  const rss = Object.entries(r.memory_mb);
  const worst = rss.reduce<[string, number] | null>((w, e) => (w === null || e[1] > w[1] ? e : w), null);
  out.push({
    target: `peak RSS <= ${TARGETS.peakRssMb} MB for every service`,
    figure: worst ? `largest ${worst[0]} ${worst[1].toFixed(0)} MB` : 'not measured',
    met: worst ? worst[1] <= TARGETS.peakRssMb : null,
  });
  if ('balance' in r.growth) {
    const g = r.growth;
    const enough = g.rows_large >= TARGETS.growthRows;
    out.push({
      target: `growth: balance and history p50 within ${TARGETS.growthRatio}x from 10,000 to ${TARGETS.growthRows.toLocaleString('en-US')} journal rows`,
      figure: `balance ${x(g.balance.ratio_p50)}, history ${x(g.history.ratio_p50)} at ${g.rows_large.toLocaleString('en-US')} rows`,
      met: enough ? g.balance.ratio_p50 <= TARGETS.growthRatio && g.history.ratio_p50 <= TARGETS.growthRatio : null,
    });
  } else {
    out.push({ target: 'growth to 10,000,000 journal rows', figure: `skipped (${r.growth.skipped})`, met: null });
  }
  const backlog = r.notification_mail_backlog_at_end;
  out.push({
    target: 'notification mails queued at the end <= one per member who earned',
    figure: backlog === null ? 'unknown' : `${backlog} queued, ${membersWhoEarned ?? '?'} members earned`,
    met: backlog === null || membersWhoEarned === null ? null : backlog <= membersWhoEarned,
  });
  out.push({
    target: 'every check of the benchmark passes',
    figure: r.problems.length === 0 ? 'no problems' : `${r.problems.length} problems`,
    met: r.problems.length === 0,
  });
  const traced = r.tracing && 'ratio' in r.tracing ? r.tracing : undefined;
  out.push({
    target: `points_earn with tracing on (10 % sampled) >= ${TARGETS.tracingRatio}x the same earn with it off`,
    figure: traced ? `${x(traced.ratio)} at ${traced.sampling * 100} % sampled` : 'not run',
    met: traced ? traced.ratio >= TARGETS.tracingRatio : null,
  });
  const imp = r.imports && 'phases' in r.imports ? r.imports : null;
  // The services' peak (the bench process generates the files and is not part of the system).
  const importPeak = imp
    ? Math.max(...Object.entries(imp.memory_mb).flatMap(([k, v]) => (k === 'bench' ? [] : [v])))
    : null;
  out.push({
    target: `1,000,000 members + 1,000,000 balance lines imported in <= ${TARGETS.importSeconds} s, <= ${TARGETS.importRssMb} MB resident in any service`,
    figure: imp
      ? `${imp.rows.toLocaleString('en-US')} + ${imp.rows.toLocaleString('en-US')} rows in ${imp.total_s} s, peak ${importPeak} MB`
      : 'not run',
    met:
      imp && imp.rows >= 1_000_000 && importPeak !== null
        ? imp.total_s <= TARGETS.importSeconds && importPeak <= TARGETS.importRssMb
        : null,
  });
  const exp = r.exports && 'exports' in r.exports ? r.exports : null;
  const slowest = exp ? Math.min(...exp.exports.map((e) => e.rows_per_second)) : null;
  out.push({
    target: `the journal exported (CSV and JSON Lines) at >= ${TARGETS.exportRowsPerSecond.toLocaleString('en-US')} rows/s at 10,000,000 rows`,
    figure: exp
      ? `${slowest?.toLocaleString('en-US')} rows/s (the slower format) at ${exp.journal_rows.toLocaleString('en-US')} rows`
      : 'not run',
    met: exp && exp.journal_rows >= 10_000_000 && slowest !== null ? slowest >= TARGETS.exportRowsPerSecond : null,
  });
  return out;
}

/** The fourth round's targets (CPU_TARGETS) against a run. */
function fourthRound(r: Omit<BenchReport, 'target_checks'>): TargetCheck[] {
  const out: TargetCheck[] = [];
  const scenario = (name: string) => r.scenarios.find((s) => s.name === name);
  for (const [name, limit] of Object.entries(CPU_TARGETS.cpuRatio)) {
    const s = scenario(name);
    const full = s?.cpu_us_per_request.full?.total;
    const tuned = s?.cpu_us_per_request.tuned?.total;
    out.push({
      target: `${name}: CPU per request of the whole path <= ${limit}x the tuned statements'${name.startsWith('points_earn_') ? " (a plain earn's)" : ''}`,
      figure:
        s && s.cpu_ratio_to_tuned !== null
          ? `${x(s.cpu_ratio_to_tuned)} (${full} vs ${tuned} µs)`
          : s
            ? 'CPU not measured (no /proc or no baseline)'
            : 'not run',
      met: s && s.cpu_ratio_to_tuned !== null ? s.cpu_ratio_to_tuned <= limit : null,
    });
  }
  for (const name of ['points_earn', 'cashback_earn']) {
    const s = scenario(name);
    const steady = s?.steady;
    // The rate must have been offered and (nearly) answered for its latency to say anything.
    const held = steady
      ? steady.offered_rps >= CPU_TARGETS.steadyRps && steady.rps >= steady.offered_rps * 0.95
      : false;
    out.push({
      target: `${name}: p99 <= ${CPU_TARGETS.steadyP99Ms} ms at a steady ${CPU_TARGETS.steadyRps.toLocaleString('en-US')} requests/s`,
      figure: steady
        ? `p99 ${ms(steady.p99_ms)} at ${steady.rps} of ${steady.offered_rps} requests/s offered, ${steady.errors} errors`
        : 'not run',
      met: steady
        ? steady.offered_rps >= CPU_TARGETS.steadyRps
          ? held && steady.errors === 0 && steady.p99_ms <= CPU_TARGETS.steadyP99Ms
          : null
        : null,
    });
    out.push({
      target: `${name}: throughput >= ${CPU_TARGETS.earnTunedRatio}x the tuned statements direct`,
      figure: s ? x(s.tuned_ratio) : 'not run',
      met: s && s.tuned_ratio !== null ? s.tuned_ratio >= CPU_TARGETS.earnTunedRatio : null,
    });
  }
  return out;
}

export function formatTargets(checks: TargetCheck[]): string {
  const verdict = (m: boolean | null) => (m === null ? 'not measured' : m ? 'met' : 'NOT MET');
  return [
    'targets, each against this run:',
    ...checks.map((c) => `  [${verdict(c.met)}] ${c.target}: ${c.figure}`),
  ].join('\n');
}

/**
 * A ruled earn against the plain earn of the same run: over their turns (bench/earn-turns.ts) when
 * they were measured in turns, else the two single runs.
 */
function earnRatio(
  r: Omit<BenchReport, 'target_checks'>,
  name: ScenarioName,
  what: string,
  target: number,
): TargetCheck {
  const check = `${name} ${what} >= ${target}x the plain points_earn of the same run`;
  const turned = r.earn_turns && 'figures' in r.earn_turns ? r.earn_turns.figures[name] : undefined;
  const plain = r.scenarios.find((s) => s.name === 'points_earn');
  const single = r.scenarios.find((s) => s.name === name);
  const once = plain && single ? single.rps / plain.rps : null;
  if (turned)
    return {
      target: check,
      figure: `${x(turned.ratio)} over ${turned.turns.length} turn${turned.turns.length === 1 ? '' : 's'} each (${turned.turns.map((t) => x(t.rps / t.plain_rps)).join(', ')})${once === null ? '' : `; the single runs ${x(once)}`}`,
      met: turned.ratio >= target,
    };
  return { target: check, figure: once === null ? 'not run' : x(once), met: once === null ? null : once >= target };
}
