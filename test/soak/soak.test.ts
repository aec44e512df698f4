import path from 'node:path';
import { expect, it } from 'vitest';
import { repoRoot } from '../support/cluster.ts';
import { defaultOptions, runSoak } from '../../soak/run.ts';
import { formatReport } from '../../soak/report.ts';

/**
 * The short soak: 90 s of the realistic load on two replicas of everything while a fixed seed's
 * schedule injects faults (kills, pauses, server restarts, proxy latency and cuts, a failing
 * webhook receiver); every invariant must hold over what was acknowledged. Its own private
 * servers: the suite's shared ones are never stopped. `npm run soak` runs the long one.
 */
it('keeps every invariant through 90 s of load and injected faults (seed suite-1)', async () => {
  const opts = defaultOptions();
  Object.assign(opts, {
    seconds: 90,
    // Modest: the suite runs another test file beside this one on a small machine.
    rate: 30,
    seed: 'suite-1',
    everySeconds: [12, 24],
    tenants: 3,
    drainSeconds: 90,
    // Two cores shared with another test file: a few requests may time out with no fault at all
    // (seen: 2 of 3,516 attempts); more than 0.2 % of them, or any other error, still fails.
    slowBudget: 0.002,
    out: path.join(repoRoot, 'var', 'soak-suite.json'),
    log: (line: string) => process.env.SOAK_VERBOSE && console.log(`[soak] ${line}`),
  });
  // The suite's set-up built dist/ already.
  process.env.SOAK_SKIP_BUILD = '1';
  const report = await runSoak(opts);
  const failed = report.checks.filter((c) => !c.ok);
  expect(
    failed.map((c) => `${c.name}: ${c.figure}`),
    formatReport(report),
  ).toEqual([]);
  // The run did what it claims: faults were injected and writes acknowledged under them.
  expect(report.faults.injected.length).toBeGreaterThanOrEqual(3);
  expect(report.totals.acknowledged).toBeGreaterThan(500);
}, 600_000);
