// Command-line options of `npm run bench` (see bench/README.md).
import { parseArgs } from 'node:util';

export const ALL_SCENARIOS = [
  'points_earn',
  'points_earn_rules',
  'points_earn_tiers',
  'cashback_earn',
  'points_balance',
  'points_history',
  'cashback_redeem',
] as const;
export type ScenarioName = (typeof ALL_SCENARIOS)[number];

export interface BenchOptions {
  /** Seconds of measured load per scenario (full path and baseline each). */
  duration: number;
  /** Seconds of unmeasured load before each measured run. */
  warmup: number;
  connections: number;
  /** A running gateway to drive instead of starting the system here. */
  url: string | undefined;
  /** Database of the running system (only for --url): enables the growth figure and the baseline there. */
  databaseUrl: string | undefined;
  scenarios: ScenarioName[];
  skipGrowth: boolean;
  skipBaseline: boolean;
  skipExpiry: boolean;
  /** Lots due at once for the expiry figure. */
  expiryLots: number;
  /** Members and balance lines of the import figure (0: left out). */
  importRows: number;
  /** Journal rows of the export figure (the growth figure's card grown to this many with SQL; 0 leaves it out). */
  exportRows: number;
  /** Leave out the webhooks scenario. */
  skipWebhooks: boolean;
  /** Offered rate of the earns' steady-load run (latency at a fixed rate, not at saturation; 0 leaves it out). */
  steadyRps: number;
  /** Leave out the cost of tracing (a second system with tracing on), and the share it samples. */
  skipTracing: boolean;
  tracingSampling: number;
  /** Turns of points_earn with tracing off and on each. */
  tracingRounds: number;
  /** Rounds of the rules and tiers earns in turns with the plain earn (0: none). */
  earnTurns: number;
  /** Leave out the tier recompute figure, and the members it recomputes. */
  skipTierRecompute: boolean;
  tierMembers: number;
  /** Webhooks: seconds of steady earns, their rate, and the events injected for the capacity figure. */
  webhookSeconds: number;
  webhookRate: number;
  webhookEvents: number;
  /** Members provisioned for the earn and balance scenarios (each request of an earn goes to the next one). */
  members: number;
  /** Journal rows of the history member (the history scenario reads its first page). */
  historyRows: number;
  /** Journal rows of the large account of the growth figure. */
  growthRows: number;
  /** Accounts the redemption scenario concentrates on, and the cashback each starts with (cents). */
  redeemAccounts: number;
  redeemStartCents: number;
  /** Sequential requests per growth measurement. */
  growthRequests: number;
  out: string;
  /** Keep the bench database after the run (for inspection). */
  keep: boolean;
  quiet: boolean;
  /** Started system only: compile the services first (the smoke test relies on the suite's build). */
  build: boolean;
  /** Longest wait for the event backlog after each phase (0: do not wait). */
  settleSeconds: number;
  /** Started system only: write a V8 CPU profile of every service to var/bench-profiles/. */
  profile: boolean;
  /** Started system only: its database and NATS subject root. */
  database: string;
  subjectRoot: string;
}

const HELP = `npm run bench -- [options]
  --duration <s>        seconds of measured load per scenario and per side (default 10)
  --warmup <s>          seconds of unmeasured load before each measured run (default 2)
  --connections <n>     concurrent connections / in-flight operations (default 32)
  --url <gateway>       drive a running system (operator token from OPERATOR_TOKEN or var/secrets.json)
  --database-url <url>  with --url: that system's database, for the baseline and the growth figure
  --scenarios <a,b>     subset of ${ALL_SCENARIOS.join(', ')}, or none
  --skip-growth         leave out the 10,000 vs 10,000,000 journal rows figure
  --skip-baseline       leave out the direct-SQL baselines (naive and tuned)
  --skip-expiry         leave out the lots-expired-per-second figure
  --expiry-lots <n>     lots due at once for that figure (default 1000000)
  --import-rows <n>     members, then as many balance lines, imported through the operator API for the
                        import figure (default 1000000; 0 leaves it out)
  --skip-imports        leave out the import figure (as --import-rows 0)
  --export-rows <n>     journal rows exported through the gateway (CSV and JSON Lines) for the export
                        figure, with the report's latency on that journal (default 10000000; the
                        growth figure's rows count, the rest is written with SQL; 0 leaves it out)
  --skip-exports        leave out the export figure (as --export-rows 0)
  --skip-webhooks       leave out the webhooks scenario
  --steady-rps <n>      offered rate of a second run of points_earn and cashback_earn at a fixed pace,
                        for their latency at a steady load (default 1000; 0 leaves it out)
  --skip-tracing        leave out the cost of tracing (points_earn again on a system with tracing on)
  --tracing-sampling <r> share of new traces sampled for that figure (default 0.1)
  --tracing-rounds <n>  turns of points_earn with tracing off and on, alternating (default 3)
  --earn-turns <n>      rounds of points_earn_rules and points_earn_tiers in turns with points_earn on
                        the same system, for their ratios (default 3; 0: the ratios of the single runs)
  --skip-tier-recompute leave out the tier recompute job's rate (members/s, earns served meanwhile)
  --tier-members <n>    members of the card that job recomputes (default 1000000, written with SQL)
  --webhook-seconds <s> seconds of steady points earns of the webhooks scenario (default 20)
  --webhook-rate <n>    their rate, earns a second (default 500; two endpoints: twice as many deliveries)
  --webhook-events <n>  events injected into the stream for the delivery capacity figure (default 10000)
  --members <n>         members for the earn and balance scenarios (default 2000)
  --history-rows <n>    journal rows of the history member (default 10000)
  --growth-rows <n>     journal rows of the large account (default 10000000)
  --growth-requests <n> sequential requests per growth measurement (default 300)
  --redeem-accounts <n> accounts the redemption scenario concentrates on (default 4)
  --redeem-balance <x>  cashback each of them starts with (default 25.00; each redemption takes 0.10)
  --out <dir>           where latest.json / latest.svg / latest.png go (default bench/results)
  --keep                keep the loyalty_bench database afterwards
  --profile             sample every service's CPU (inspector profiler) into var/bench-profiles/
                        and print where each spent its time (bench/profile-summary.ts)
  --quiet               no progress lines`;

export function parseOptions(argv: string[]): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '2' },
      connections: { type: 'string', default: '32' },
      url: { type: 'string' },
      'database-url': { type: 'string' },
      scenarios: { type: 'string' },
      'skip-growth': { type: 'boolean', default: false },
      'skip-baseline': { type: 'boolean', default: false },
      'skip-expiry': { type: 'boolean', default: false },
      'expiry-lots': { type: 'string', default: '1000000' },
      'skip-webhooks': { type: 'boolean', default: false },
      'steady-rps': { type: 'string', default: '1000' },
      'import-rows': { type: 'string', default: '1000000' },
      'skip-imports': { type: 'boolean', default: false },
      'export-rows': { type: 'string', default: '10000000' },
      'skip-exports': { type: 'boolean', default: false },
      'skip-tracing': { type: 'boolean', default: false },
      'tracing-sampling': { type: 'string', default: '0.1' },
      'tracing-rounds': { type: 'string', default: '3' },
      'earn-turns': { type: 'string', default: '3' },
      'skip-tier-recompute': { type: 'boolean', default: false },
      'tier-members': { type: 'string', default: '1000000' },
      'webhook-seconds': { type: 'string', default: '20' },
      'webhook-rate': { type: 'string', default: '500' },
      'webhook-events': { type: 'string', default: '10000' },
      members: { type: 'string', default: '2000' },
      'history-rows': { type: 'string', default: '10000' },
      'growth-rows': { type: 'string', default: '10000000' },
      'redeem-accounts': { type: 'string', default: '4' },
      'redeem-balance': { type: 'string', default: '25' },
      'growth-requests': { type: 'string', default: '300' },
      out: { type: 'string', default: 'bench/results' },
      keep: { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      quiet: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    allowPositionals: false,
  });
  if (values.help) {
    console.log(HELP);
    process.exit(0);
  }
  const num = (name: string, v: string, min: number): number => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < min) throw new Error(`--${name} must be a number >= ${min} (got ${v})`);
    return n;
  };
  const ratio = (name: string, v: string): number => {
    const n = num(name, v, 0);
    if (n > 1) throw new Error(`--${name} must be a ratio between 0 and 1 (got ${v})`);
    return n;
  };
  const scenarios =
    values.scenarios === 'none'
      ? []
      : values.scenarios
        ? values.scenarios
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : [...ALL_SCENARIOS];
  for (const s of scenarios)
    if (!(ALL_SCENARIOS as readonly string[]).includes(s))
      throw new Error(`unknown scenario ${s}; known: ${ALL_SCENARIOS.join(', ')}`);
  return {
    duration: num('duration', values.duration, 0.5),
    warmup: num('warmup', values.warmup, 0),
    connections: Math.floor(num('connections', values.connections, 1)),
    url: values.url?.replace(/\/$/, ''),
    databaseUrl: values['database-url'],
    scenarios: scenarios as ScenarioName[],
    skipGrowth: values['skip-growth'],
    skipBaseline: values['skip-baseline'],
    skipExpiry: values['skip-expiry'],
    expiryLots: Math.floor(num('expiry-lots', values['expiry-lots'], 10)),
    skipWebhooks: values['skip-webhooks'],
    steadyRps: Math.floor(num('steady-rps', values['steady-rps'], 0)),
    importRows: values['skip-imports'] ? 0 : Math.floor(num('import-rows', values['import-rows'], 0)),
    exportRows: values['skip-exports'] ? 0 : Math.floor(num('export-rows', values['export-rows'], 0)),
    skipTracing: values['skip-tracing'],
    tracingSampling: ratio('tracing-sampling', values['tracing-sampling']),
    tracingRounds: Math.floor(num('tracing-rounds', values['tracing-rounds'], 1)),
    earnTurns: Math.floor(num('earn-turns', values['earn-turns'], 0)),
    skipTierRecompute: values['skip-tier-recompute'],
    tierMembers: Math.floor(num('tier-members', values['tier-members'], 1)),
    webhookSeconds: num('webhook-seconds', values['webhook-seconds'], 0.5),
    webhookRate: num('webhook-rate', values['webhook-rate'], 1),
    webhookEvents: Math.floor(num('webhook-events', values['webhook-events'], 0)),
    members: Math.floor(num('members', values.members, 1)),
    historyRows: Math.floor(num('history-rows', values['history-rows'], 1)),
    growthRows: Math.floor(num('growth-rows', values['growth-rows'], 1)),
    redeemAccounts: Math.floor(num('redeem-accounts', values['redeem-accounts'], 1)),
    redeemStartCents: Math.round(num('redeem-balance', values['redeem-balance'], 0.1) * 100),
    growthRequests: Math.floor(num('growth-requests', values['growth-requests'], 10)),
    out: values.out,
    keep: values.keep,
    quiet: values.quiet,
    build: true,
    settleSeconds: 180,
    profile: values.profile,
    database: process.env.BENCH_DATABASE ?? 'loyalty_bench',
    subjectRoot: process.env.BENCH_SUBJECT_ROOT ?? 'loyalty_bench',
  };
}
