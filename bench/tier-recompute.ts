// The tier recompute job's rate: the tiers scenario's card gets `members` more members written with
// SQL (generate_series), each as the ledger keeps a member who earned twice in the rolling year (the
// account, two credit journal rows, the qualifying days, the tier its total reached), then the
// operator raises the ladder's thresholds; the ledger's job (services/ledger/src/tiers/recompute.ts)
// recomputes every member of the card. Meanwhile earns on the same card go on at a steady rate
// through the gateway. The figure is members per second from the job's creation to its finish (the
// job's own timestamps); the target is 1,000,000 members in at most 2 minutes.
//
// Raised thresholds move nobody up, so the job writes no upgrade events: what is measured is the
// job's own work (every member's days rebuilt and tier decided), not the event consumers'.
import type pg from 'pg';
import type { Api } from './api.ts';
import { runHttp, type Measured } from './load.ts';
import { BENCH_LADDER, type Fixture } from './provision.ts';
import { httpScenario } from './scenarios.ts';

export interface TierRecomputeReport {
  members: number;
  /** Seconds to write them with SQL (not part of the figure). */
  seed_seconds: number;
  /** From the job's creation (the PUT) to its finish. */
  seconds: number;
  members_per_second: number;
  /** Seconds 1,000,000 members would take at that rate, and the target. */
  seconds_per_million: number;
  target_seconds_per_million: number;
  /** Earns on the same card during the job, at a steady offered rate (p99: the worst of its 2-second slices). */
  earns: { offered_per_s: number; rps: number; worst_p99_ms: number; errors: number; requests: number };
  checks: string[];
}

/** Earns a second offered to the card while the job runs. */
export const EARNS_DURING_RECOMPUTE = 200;
const FIRST_MEMBER = 300_000_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `n` members on the card: 2 credits each in the last 300 days (0 to 2,900 points in all), their
 * days, and the tier that total reached on the bench ladder, with the window counter the later
 * credit left (counted from its window's start), as the earns would have left them.
 */
async function seed(db: pg.PoolClient, cardId: number, tenantId: number, n: number): Promise<void> {
  const member = `${FIRST_MEMBER} + g`;
  const each = '50 * (g % 30)'; // points per credit
  await db.query(
    `INSERT INTO ledger.accounts (card_id, member_id, tenant_id, balance, entries, created_at, updated_at)
     SELECT $1, ${member}, $2, 2 * GREATEST(${each}, 1), 2, now() - interval '330 days', now() - interval '1 day'
       FROM generate_series(1, $3::int) g`,
    [cardId, tenantId, n],
  );
  await db.query(
    `INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, purchase_cents, created_at)
     SELECT $2, $1, ${member}, 'staff_added_points', GREATEST(${each}, 1), k * GREATEST(${each}, 1), 100 * GREATEST(${each}, 1),
            now() - make_interval(days => (g % 300) / k)
       FROM generate_series(1, $3::int) g, generate_series(1, 2) k`,
    [cardId, tenantId, n],
  );
  await db.query(
    `INSERT INTO ledger.tier_days (card_id, member_id, day, amount)
     SELECT $1::bigint, ${member}, (now() AT TIME ZONE 'UTC')::date - (g % 300) / k, sum(GREATEST(${each}, 1))
       FROM generate_series(1, $2::int) g, generate_series(1, 2) k GROUP BY 1, 2, 3`,
    [cardId, n],
  );
  const [, silver, gold] = BENCH_LADDER.tiers;
  await db.query(
    `INSERT INTO ledger.member_tiers (card_id, member_id, tenant_id, rank, prev_rank, valid_until, warn_at, joined_on,
                                      qualifying, counted_from, updated_at)
     SELECT $1, ${member}, $2, r, r, CASE WHEN r > 1 THEN now() + interval '200 days' END,
            CASE WHEN r > 1 THEN now() + interval '170 days' END, (now() - interval '330 days')::date,
            2 * GREATEST(${each}, 1), (now() AT TIME ZONE 'UTC')::date - (g % 300) / 2 - 364, now() - interval '1 day'
       FROM (SELECT g, CASE WHEN 2 * GREATEST(${each}, 1) >= $4 THEN 3 WHEN 2 * GREATEST(${each}, 1) >= $5 THEN 2 ELSE 1 END AS r
               FROM generate_series(1, $3::int) g) s`,
    [cardId, tenantId, n, gold!.entry_threshold, silver!.entry_threshold],
  );
}

interface Job {
  status: string;
  progress: { done: number; total: number | null };
  created_at: string;
  finished_at: string | null;
  errors: unknown[];
}

export async function measureTierRecompute(
  api: Api,
  f: Fixture,
  pool: pg.Pool,
  opts: { members: number; url: string; timeoutSeconds: number; log: (line: string) => void },
): Promise<TierRecomputeReport> {
  const cardId = f.tiersCardId;
  opts.log(`tier recompute: writing ${opts.members.toLocaleString('en-US')} members of the tiers card`);
  const started = Date.now();
  const db = await pool.connect();
  try {
    await db.query('BEGIN');
    await seed(db, cardId, f.tenantId, opts.members);
    await db.query('COMMIT');
  } catch (err) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    db.release();
  }
  await pool.query('VACUUM ANALYZE ledger.accounts, ledger.journal, ledger.tier_days, ledger.member_tiers');
  await pool.query('CHECKPOINT').catch(() => undefined);
  const seedSeconds = Math.round((Date.now() - started) / 100) / 10;

  // Raised thresholds: every member is recomputed, nobody moves up.
  const [bronze, silver, gold] = BENCH_LADDER.tiers;
  const raised = {
    ...BENCH_LADDER,
    tiers: [bronze, { ...silver!, entry_threshold: 250 }, { ...gold!, entry_threshold: 1200 }],
  };
  opts.log('tier recompute: raising the thresholds (the job recomputes every member; earns go on meanwhile)');
  const answer = await api.admin<{ recompute_job_id: string | null }>(
    'PUT',
    `/admin/v1/tenants/${f.tenantId}/cards/${cardId}/tiers`,
    raised,
  );
  const jobId = answer.recompute_job_id;
  if (!jobId) throw new Error('tier recompute: the ladder change started no job');

  const earns: Measured[] = [];
  const headers = { 'x-app-id': f.app.appId, 'x-api-key': f.app.apiKey };
  const scenario = httpScenario('points_earn_tiers', f, 'full', api, 8);
  let job: Job | undefined;
  const deadline = Date.now() + opts.timeoutSeconds * 1000;
  const poll = (async () => {
    for (;;) {
      job = await api.admin<Job>('GET', `/admin/v1/jobs/${jobId}`);
      if (job.status === 'succeeded' || job.status === 'failed') return;
      if (Date.now() > deadline)
        throw new Error(`tier recompute: job ${jobId} not done after ${opts.timeoutSeconds} s`);
      await sleep(250);
    }
  })();
  let finished = false;
  void poll.finally(() => (finished = true)).catch(() => undefined);
  while (!finished) {
    earns.push(
      await runHttp({
        url: opts.url,
        connections: 8,
        seconds: 2,
        headers,
        next: scenario.next,
        overallRate: EARNS_DURING_RECOMPUTE,
      }),
    );
  }
  await poll;
  const done = job!;
  const seconds = Math.max(
    0.001,
    (Date.parse(done.finished_at ?? new Date().toISOString()) - Date.parse(done.created_at)) / 1000,
  );
  const checks: string[] = [];
  if (done.status !== 'succeeded') checks.push(`tier recompute: job ${done.status} (${JSON.stringify(done.errors)})`);
  const { rows } = await pool.query<{ tiers: string; accounts: string }>(
    `SELECT (SELECT count(*) FROM ledger.member_tiers WHERE card_id = $1) AS tiers,
            (SELECT count(*) FROM ledger.accounts WHERE card_id = $1) AS accounts`,
    [cardId],
  );
  const accounts = Number(rows[0]!.accounts);
  if (done.progress.done !== accounts)
    checks.push(`tier recompute: ${done.progress.done} members done, ${accounts} on the card`);
  if (Number(rows[0]!.tiers) !== accounts)
    checks.push(`tier recompute: ${rows[0]!.tiers} tier rows, ${accounts} accounts`);
  const requests = earns.reduce((a, m) => a + m.requests, 0);
  const measuredSeconds = earns.reduce((a, m) => a + m.seconds, 0);
  const earnErrors = earns.reduce((a, m) => a + m.errors, 0);
  if (earnErrors > 0) checks.push(`tier recompute: ${earnErrors} earns failed during the job`);
  const rate = Math.round(done.progress.done / seconds);
  return {
    members: done.progress.done,
    seed_seconds: seedSeconds,
    seconds: Math.round(seconds * 10) / 10,
    members_per_second: rate,
    seconds_per_million: Math.round(1_000_000 / Math.max(rate, 1)),
    target_seconds_per_million: 120,
    earns: {
      offered_per_s: EARNS_DURING_RECOMPUTE,
      rps: Math.round((requests / Math.max(measuredSeconds, 0.001)) * 10) / 10,
      worst_p99_ms: Math.max(0, ...earns.map((m) => m.p99_ms).filter(Number.isFinite)),
      errors: earnErrors,
      requests,
    },
    checks,
  };
}
