// Referral statistics at scale: 100,000 referrals on one card (plus 50,000 on other cards) in a
// scratch database, then the service's own statistics and top-referrer queries (the store
// module's SQL) timed per period. Run: node --import tsx bench/referrals-stats.ts
// Env: BENCH_POSTGRES_URL (admin connection, default postgres://postgres@127.0.0.1:5432/postgres),
// BENCH_REFERRALS (default 100000), BENCH_REFERRERS (default 5000), BENCH_ITERATIONS (default 50).
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createLogger, migrate } from '@loyalty/runtime';
import type { ReferralPeriod } from '@loyalty/contracts';
import { countReferrals, periodStart, topReferrers } from '@loyalty/referrals';

const ADMIN_URL =
  process.env.BENCH_POSTGRES_URL || process.env.LOYALTY_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const REFERRALS = Number(process.env.BENCH_REFERRALS ?? 100_000);
const REFERRERS = Number(process.env.BENCH_REFERRERS ?? 5_000);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 50);
const CARD = 1;

const name = `loyalty_bench_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: ADMIN_URL });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const url = ADMIN_URL.replace(/\/[^/]*$/, `/${name}`);
const pool = new pg.Pool({ connectionString: url, max: 2 });
pool.on('error', () => undefined); // the DROP DATABASE ... WITH (FORCE) at the end may terminate an idle connection

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

async function time(fn: () => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 3; i++) await fn(); // warm the cache
  const ms: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) {
    const t = process.hrtime.bigint();
    await fn();
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  ms.sort((a, b) => a - b);
  return { p50: percentile(ms, 50), p99: percentile(ms, 99) };
}

try {
  await migrate({
    databaseUrl: url,
    schema: 'referrals',
    dir: fileURLToPath(new URL('../services/referrals/migrations', import.meta.url)),
    log: createLogger('bench', 'silent'),
  });
  const now = new Date();
  const started = Date.now();
  // Referrers skewed (a few refer many), creation spread over a year, 80% completed.
  // Other cards get half as many rows so the card filter has something to skip.
  await pool.query(
    `INSERT INTO referrals.referrals (tenant_id, card_id, referrer_id, referee_id, code, referrer_bonus, referee_bonus, status, payment_due_at, created_at, completed_at)
     SELECT 1, card, referrer, 1000000 + g, 'BENCH', 100, 50, status, created, created,
            CASE WHEN status = 'completed' THEN created END
       FROM (SELECT g,
                    CASE WHEN random() < 0.8 THEN 'completed' ELSE 'pending' END AS status,
                    CASE WHEN g <= $1 THEN $2::bigint ELSE 2 + (g % 20) END AS card,
                    1 + floor(power(random(), 3) * $3)::bigint AS referrer,
                    $4::timestamptz - random() * interval '365 days' AS created
               FROM generate_series(1, $1 + $1 / 2) g) s`,
    [REFERRALS, CARD, REFERRERS, now],
  );
  await pool.query('VACUUM ANALYZE referrals.referrals');
  const loadSeconds = (Date.now() - started) / 1000;

  const periods: ReferralPeriod[] = ['7d', '30d', '90d', 'all'];
  const rows: { query: string; period: string; rows: number; p50: number; p99: number }[] = [];
  for (const period of periods) {
    const since = periodStart(period, now);
    const counts = await countReferrals(pool, CARD, since);
    rows.push({
      query: 'statistics',
      period,
      rows: counts.total,
      ...(await time(() => countReferrals(pool, CARD, since))),
    });
  }
  for (const period of periods) {
    const since = periodStart(period, now);
    const top = await topReferrers(pool, CARD, since, 10);
    rows.push({
      query: 'top referrers (limit 10)',
      period,
      rows: top.total,
      ...(await time(() => topReferrers(pool, CARD, since, 10))),
    });
  }
  const top100 = await time(() => topReferrers(pool, CARD, null, 100));
  rows.push({
    query: 'top referrers (limit 100)',
    period: 'all',
    rows: (await topReferrers(pool, CARD, null, 100)).total,
    ...top100,
  });

  const plan = await pool.query<{ 'QUERY PLAN': string }>(
    `EXPLAIN SELECT count(*) FILTER (WHERE status = 'completed') FROM referrals.referrals WHERE card_id = $1 AND created_at >= $2`,
    [CARD, periodStart('30d', now)],
  );
  console.log(
    `referral statistics benchmark: ${REFERRALS.toLocaleString('en')} referrals on card ${CARD} (+${(REFERRALS / 2).toLocaleString('en')} on other cards), ${REFERRERS.toLocaleString('en')} referrers, loaded in ${loadSeconds.toFixed(1)} s; ${ITERATIONS} timed runs each`,
  );
  console.log('');
  console.log(`| query                     | period | rows/referrers | p50 ms | p99 ms |`);
  console.log(`|---------------------------|--------|----------------|--------|--------|`);
  for (const r of rows) {
    console.log(
      `| ${r.query.padEnd(25)} | ${r.period.padEnd(6)} | ${String(r.rows).padStart(14)} | ${r.p50.toFixed(2).padStart(6)} | ${r.p99.toFixed(2).padStart(6)} |`,
    );
  }
  console.log('');
  console.log(`plan of the 30d statistics query: ${plan.rows.map((r) => r['QUERY PLAN'].trim()).join(' / ')}`);
} finally {
  await pool.end();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
