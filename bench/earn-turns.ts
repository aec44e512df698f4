// The earns with rules and with tiers against the plain earn, in alternating turns on the same
// system: plain, tiers, rules in even rounds and rules, tiers, plain in odd ones (`rounds` of each),
// each turn after the event backlog of the one before is done. The one run of each scenario
// (run.ts) follows the other by a minute; a machine whose load comes and goes between them moved
// the ratio by up to a quarter from run to run, where turns weigh on every side alike. Each ratio
// is of summed requests over summed seconds, with the CPU per request of every process beside it.
import type { Measured } from './load.ts';
import { cpuPerRequest, sampleCpu } from './cpu.ts';
import type { ScenarioName } from './options.ts';

/** The scenarios measured in turns against `points_earn`. */
export const TURNED: readonly ScenarioName[] = ['points_earn_rules', 'points_earn_tiers'];

export interface TurnedFigure {
  /** Each round's rps of the plain earn and of this scenario, in the order run. */
  turns: { plain_rps: number; rps: number }[];
  plain_rps: number;
  rps: number;
  ratio: number;
  /** CPU microseconds per request, all processes, over the turns (null: not measured here). */
  cpu_us: { plain: number | null; scenario: number | null };
  /** Unexpected outcomes over this scenario's turns (and the plain earn's). */
  errors: { plain: number; scenario: number };
}

export interface EarnTurnsReport {
  rounds: number;
  seconds: number;
  figures: Partial<Record<ScenarioName, TurnedFigure>>;
}

interface Side {
  requests: number;
  seconds: number;
  cpuUs: number;
  cpuKnown: boolean;
  rps: number[];
  errors: number;
}

export async function measureEarnTurns(opts: {
  /** Scenarios run (those of TURNED among them get turns). */
  scenarios: readonly ScenarioName[];
  rounds: number;
  seconds: number;
  /** One turn of a scenario for `seconds`. */
  run: (name: ScenarioName, seconds: number) => Promise<Measured>;
  /** Wait for the system's event backlog (at most `maxSeconds`). */
  settle: (maxSeconds: number) => Promise<unknown>;
  pids: () => Record<string, number>;
  log: (line: string) => void;
}): Promise<EarnTurnsReport | { skipped: string }> {
  const turned = TURNED.filter((n) => opts.scenarios.includes(n));
  if (opts.rounds <= 0) return { skipped: '--earn-turns 0' };
  if (!opts.scenarios.includes('points_earn') || turned.length === 0)
    return { skipped: 'needs points_earn and points_earn_rules or points_earn_tiers' };
  const order: ScenarioName[] = ['points_earn', ...turned];
  const sides = new Map<ScenarioName, Side>(
    order.map((n) => [n, { requests: 0, seconds: 0, cpuUs: 0, cpuKnown: true, rps: [], errors: 0 }]),
  );
  opts.log(`earns in turns: ${order.join(', ')}, ${opts.rounds} rounds of ${opts.seconds} s each`);
  for (let k = 0; k < opts.rounds; k++) {
    for (const name of k % 2 === 0 ? order : [...order].reverse()) {
      await opts.settle(60);
      const before = sampleCpu(opts.pids());
      const m = await opts.run(name, opts.seconds);
      const cpu = cpuPerRequest(before, sampleCpu(opts.pids()), m.requests);
      const side = sides.get(name)!;
      side.requests += m.requests;
      side.seconds += m.seconds;
      side.rps.push(m.rps);
      side.errors += m.errors;
      if (cpu?.total === undefined) side.cpuKnown = false;
      else side.cpuUs += cpu.total * m.requests;
    }
  }
  const rate = (s: Side) => Math.round((s.requests / s.seconds) * 10) / 10;
  const cpuOf = (s: Side) => (s.cpuKnown && s.requests > 0 ? Math.round(s.cpuUs / s.requests) : null);
  const plain = sides.get('points_earn')!;
  const figures: EarnTurnsReport['figures'] = {};
  for (const name of turned) {
    const side = sides.get(name)!;
    const ratio = Math.round((rate(side) / rate(plain)) * 100) / 100;
    figures[name] = {
      turns: side.rps.map((rps, i) => ({ plain_rps: plain.rps[i]!, rps })),
      plain_rps: rate(plain),
      rps: rate(side),
      ratio,
      cpu_us: { plain: cpuOf(plain), scenario: cpuOf(side) },
      errors: { plain: plain.errors, scenario: side.errors },
    };
    opts.log(
      `earns in turns: ${name} ${rate(side)} rps vs points_earn ${rate(plain)} rps = ${ratio}x (turns ${side.rps.map((r, i) => `${plain.rps[i]}/${r}`).join(', ')}; CPU ${cpuOf(plain)} / ${cpuOf(side)} µs a request)`,
    );
  }
  return { rounds: opts.rounds, seconds: opts.seconds, figures };
}
