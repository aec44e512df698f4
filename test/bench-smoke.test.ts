// A very short run of the benchmark harness (`npm run bench`): every scenario for one second at
// two connections against the compiled system, the baseline, a small growth figure, and the
// report files. It checks the report's shape and that nothing failed; the figures themselves are
// the benchmark's business, not the test's.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ALL_SCENARIOS, parseOptions } from '../bench/options.ts';
import { formatTable, writeReport } from '../bench/report.ts';
import { runBench } from '../bench/run.ts';
import { connectAs } from './support/nats.ts';

const out = mkdtempSync(path.join(os.tmpdir(), 'bench-smoke-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('npm run bench (smoke)', () => {
  it('measures every scenario on both sides, finds no unexpected error or overdraft, and writes the table, JSON and chart', async () => {
    const id = randomBytes(4).toString('hex');
    const opts = {
      ...parseOptions([
        ...['--duration', '1', '--warmup', '0', '--connections', '2', '--members', '20', '--history-rows', '40'],
        ...['--growth-rows', '400', '--growth-requests', '20', '--redeem-accounts', '2', '--redeem-balance', '0.5'],
        ...['--expiry-lots', '200', '--tier-members', '200', '--tracing-rounds', '1', '--import-rows', '200'],
        ...['--earn-turns', '1'],
        ...['--export-rows', '600', '--steady-rps', '30'],
        ...['--webhook-seconds', '1', '--webhook-rate', '40', '--webhook-events', '200'],
      ]),
      quiet: true,
      build: false, // the suite's global set-up has built the services
      settleSeconds: 0, // no waiting for notification mails between phases: a smoke run only
      database: `loyalty_bench_smoke_${id}`,
      subjectRoot: `bsmoke${id}`,
    };
    // The baseline's outbox rows are written as published: the ledger's relay must never send them.
    const nc = await connectAs('admin');
    let leaked = 0;
    const sub = nc.subscribe('bench_baseline.events.>', { callback: () => leaked++ });
    const report = await runBench(opts);
    await nc.flush();
    sub.unsubscribe();
    await nc.close();
    expect(leaked).toBe(0);

    expect(report.scenarios.map((s) => s.name)).toEqual([...ALL_SCENARIOS]);
    for (const s of report.scenarios) {
      expect(s.errors, `${s.name}: ${JSON.stringify(s.statuses)}`).toBe(0);
      expect(s.rps).toBeGreaterThan(0);
      expect(s.p50_ms).toBeGreaterThan(0);
      expect(s.p99_ms).toBeGreaterThanOrEqual(s.p50_ms);
      expect(s.baseline_rps).toBeGreaterThan(0);
      expect(s.baseline_errors).toBe(0);
      expect(s.ratio).toBeCloseTo(s.rps / s.baseline_rps!, 1);
      expect(s.checks).toEqual([]);
      // Where each request's CPU went, from /proc: the full path's processes, and the direct side's.
      expect(s.cpu_us_per_request.full?.total, s.name).toBeGreaterThan(0);
      expect(Object.keys(s.cpu_us_per_request.full!)).toEqual(expect.arrayContaining(['gateway', 'postgres']));
      expect(s.cpu_us_per_request.tuned?.total, s.name).toBeGreaterThan(0);
    }
    // Two accounts of 0.50 allow exactly ten redemptions of 0.10; the rest are the expected 422s.
    const redeem = report.scenarios.find((s) => s.name === 'cashback_redeem')!;
    expect(redeem.statuses['200']).toBeLessThanOrEqual(10);
    expect(redeem.expected_refusals).toBeGreaterThan(0);
    expect(report.problems).toEqual([]);

    // The webhooks scenario: every delivery arrived, with figures beside their targets.
    expect('steady' in report.webhooks).toBe(true);
    if ('steady' in report.webhooks) {
      const w = report.webhooks;
      expect(w.steady.earns).toBeGreaterThan(0);
      expect(w.steady.deliveries).toBeGreaterThanOrEqual(w.steady.earns);
      expect(w.steady.missing).toBe(0);
      expect(w.steady.p99_ms).toBeGreaterThanOrEqual(w.steady.p50_ms);
      expect(w.capacity).toMatchObject({ events: 200, deliveries: 400, missing: 0 });
      expect('deliveries_per_s' in w.capacity && w.capacity.deliveries_per_s).toBeGreaterThan(0);
      expect(w.targets).toEqual({ deliveries_per_s: 1000, p99_ms: 1000, rate_per_s: 500 });
    }
    // The rules and tiers earns in a turn each with the plain earn, whose ratios the targets judge.
    expect(report.earn_turns).toMatchObject({ rounds: 1, seconds: 1 });
    for (const name of ['points_earn_rules', 'points_earn_tiers'] as const) {
      const f = report.earn_turns && 'figures' in report.earn_turns ? report.earn_turns.figures[name] : undefined;
      expect(f?.turns, name).toHaveLength(1);
      expect(f?.ratio, name).toBeCloseTo(f!.rps / f!.plain_rps, 1);
      expect(f?.errors, name).toEqual({ plain: 0, scenario: 0 });
      expect(f?.cpu_us.scenario, name).toBeGreaterThan(0);
    }
    expect(report.target_checks.find((c) => c.target.startsWith('points_earn_tiers '))?.figure).toMatch(
      /^[\d.]+x over 1 turn each \([\d.]+x\); the single runs [\d.]+x$/,
    );
    for (const service of ['gateway', 'identity', 'ledger', 'claims', 'referrals', 'webhooks'])
      expect(report.memory_mb[service]).toBeGreaterThan(10);
    expect(report.machine.cpu_calibration_ms).toBeGreaterThan(0);
    expect('balance' in report.growth).toBe(true);
    if ('balance' in report.growth) {
      expect(report.growth.rows_small).toBe(40);
      expect(report.growth.rows_large).toBe(400);
      expect(report.growth.balance.ratio_p50).toBeGreaterThan(0);
      expect(report.growth.history.ratio_p50).toBeGreaterThan(0);
    }

    // 200 lots due on 20 accounts, all expired by the ledger's own sweep, one journal row each.
    expect(report.expiry).toMatchObject({ lots: 200, accounts: 20, journal_rows: 200, events: 20, checks: [] });
    if ('lots_per_second' in report.expiry) expect(report.expiry.lots_per_second).toBeGreaterThan(0);

    const table = formatTable(report);
    expect(table).toMatch(/expiry: [\d,]+ lots\/s/);
    for (const name of ALL_SCENARIOS) expect(table).toContain(name);
    expect(table).toMatch(
      /webhooks, one endpoint, healthy local receiver: steady .* deliveries\/s, event to delivery p50/,
    );
    expect(table).toMatch(
      /webhooks capacity, one replica draining a backlog for 2 endpoints: 400 deliveries of 200 events/,
    );
    // The speed targets are judged and printed beside the figures (a smoke run's figures meet
    // some and not others; what matters is that each is measured from this run).
    expect(report.target_checks.map((c) => c.target.split(' ')[0])).toEqual([
      'points_earn',
      'cashback_earn',
      'points_earn_rules',
      'points_earn_tiers',
      'tier', // the recompute job's rate
      'points_balance',
      'points_history',
      'cashback_redeem',
      // The fourth round: CPU per request ÷ the tuned statements', then latency at a steady rate and throughput.
      'points_earn:',
      'cashback_earn:',
      'points_balance:',
      'points_history:',
      'cashback_redeem:',
      'points_earn_rules:',
      'points_earn_tiers:',
      'points_earn:',
      'points_earn:',
      'cashback_earn:',
      'cashback_earn:',
      'peak',
      'growth:',
      'notification',
      'every',
      'points_earn', // with tracing on (a second system, 10 % of new traces sampled)
      '1,000,000', // members and balance lines imported
      'the', // the journal exported
    ]);
    for (const k of [0, 1, 2, 3, 5, 6, 7]) expect(typeof report.target_checks[k]!.met, `${k}`).toBe('boolean');
    expect(report.target_checks[4]!.met).toBeNull(); // 220 members are not the recompute target's 1,000,000
    for (const k of [8, 9, 10, 11, 12, 13, 14, 16, 18])
      expect(typeof report.target_checks[k]!.met, `${k}`).toBe('boolean');
    // 30 requests/s offered are not the target's 1,000: a figure, not a verdict.
    expect(report.target_checks[15]!.met).toBeNull();
    expect(report.target_checks[17]!.met).toBeNull();
    expect(report.target_checks[15]!.figure).toMatch(/^p99 [\d.]+ ms at [\d.]+ of 30 requests\/s offered, 0 errors$/);
    for (const name of ['points_earn', 'cashback_earn']) {
      const s = report.scenarios.find((x) => x.name === name)!;
      expect(s.steady, name).toMatchObject({ offered_rps: 30, errors: 0 });
      expect(s.steady!.rps, name).toBeGreaterThan(0);
      expect(s.steady!.p99_ms, name).toBeGreaterThanOrEqual(s.steady!.p50_ms);
      expect(s.cpu_ratio_to_tuned, name).toBeCloseTo(
        s.cpu_us_per_request.full!.total! / s.cpu_us_per_request.tuned!.total!,
        1,
      );
    }
    expect(report.scenarios.find((x) => x.name === 'points_balance')!.steady).toBeNull();
    expect(report.target_checks[20]!.met).toBeNull(); // 400 rows are not the target's 10,000,000
    expect(report.target_checks[21]!.met).toBe(true); // at most one queued mail per member who earned
    expect(report.target_checks[22]!.met).toBe(true);
    expect(typeof report.target_checks[23]!.met).toBe('boolean');
    expect(report.target_checks[24]!.met).toBeNull(); // 200 rows are not the import target's 1,000,000
    expect(report.target_checks[25]!.met).toBeNull(); // 600 rows are not the export target's 10,000,000
    // The export figure: both formats, every row of the journal, memory sampled.
    expect(report.exports && 'exports' in report.exports && report.exports.checks).toEqual([]);
    if (report.exports && 'exports' in report.exports) {
      expect(report.exports.exports.map((e) => e.format)).toEqual(['csv', 'jsonl']);
      for (const e of report.exports.exports) expect(e.rows).toBe(report.exports.journal_rows);
      expect(report.exports.journal_rows).toBeGreaterThanOrEqual(600);
    }
    // The recompute job went over the 200 members written with SQL and the 20 of the tiers scenario.
    expect(report.tier_recompute).toMatchObject({ members: 220, checks: [] });
    expect(report.mail_render).toMatchObject({ checks: [], target_share: 0.05 });
    expect(
      report.tier_recompute && 'members_per_second' in report.tier_recompute && report.tier_recompute.earns.requests,
    ).toBeGreaterThan(0);
    expect(table).toMatch(/tier recompute: [\d,]+ members\/s \(220 members in/);
    expect(report.tracing).toMatchObject({ sampling: 0.1, plain_rps: expect.any(Number) });
    expect(report.tracing && 'rps' in report.tracing && report.tracing.rps).toBeGreaterThan(0);
    expect(table).toMatch(/tracing on \(10 % of new traces sampled.*\): points_earn [\d.]+ rps/);
    expect(table).toContain('targets, each against this run:');
    expect(table).toMatch(
      /points_earn full path: [\d,]+ µs \(.*gateway \d+.*\); \d+ cores at that cost: at most [\d,]+\/s/,
    );
    expect(table).toMatch(/\[(met|NOT MET)\] points_earn >= 0.4x tuned statements direct, p99 <= 25 ms: [\d.]+x, p99/);
    expect(table).toMatch(/\n {2,}full path ÷ tuned: [\d.]+x\n/);
    expect(table).toMatch(
      /\[(met|NOT MET)\] points_earn: CPU per request of the whole path <= 4x the tuned statements': [\d.]+x \(\d+ vs \d+ µs\)/,
    );
    expect(table).toMatch(/points_earn: offered 30 rps, answered \d+ rps, p50 [\d.]+ ms, p99 [\d.]+ ms, 0 errors/);
    const written = await writeReport(report, out);
    expect(written.map((p) => path.basename(p))).toEqual(['latest.json', 'latest.svg', 'latest.png']);
    const json = JSON.parse(readFileSync(path.join(out, 'latest.json'), 'utf8')) as {
      scenarios: Record<string, unknown>[];
      memory_mb: object;
      growth: object;
    };
    for (const key of ['name', 'rps', 'p50_ms', 'p99_ms', 'errors', 'baseline_rps', 'ratio'])
      expect(json.scenarios[0]).toHaveProperty(key);
    expect(readFileSync(path.join(out, 'latest.svg'), 'utf8')).toContain('cashback_redeem');
    expect(readFileSync(path.join(out, 'latest.png')).subarray(1, 4).toString()).toBe('PNG');
    expect(existsSync(path.join(out, 'latest.png'))).toBe(true);
  }, 300_000); // two systems, every phase: ~25 s on a quiet machine, minutes on a loaded one
});
