// Exports at scale (`--export-rows N`, after the growth figure): the points card's journal (the one
// the growth figure grew) grown to N rows with SQL (generate_series, set-based, over a year and
// 10,000 accounts), then exported through the gateway as CSV and as JSON Lines while the resident
// memory of the gateway and the ledger is sampled every 100 ms: rows/s of each, their memory before
// and at the peak, and the programme report's latency on that journal (the seeded year by month,
// its last 30 days by day, a year across two calendar years by week), timed only once the ledger's
// fold has caught up (every seeded row's report delta folded into the rollups).
import { readFileSync } from 'node:fs';
import os from 'node:os';
import type pg from 'pg';
import type { Api, AppCredentials } from './api.ts';

export interface ExportFigure {
  format: 'csv' | 'jsonl';
  rows: number;
  bytes: number;
  seconds: number;
  rows_per_second: number;
  /** Resident memory (MB) before the export and its peak while it ran, sampled every 100 ms. */
  rss_mb: Record<string, { before: number; peak: number }>;
}

export interface ExportsReport {
  journal_rows: number;
  seed_seconds: number;
  fold_seconds: number;
  exports: ExportFigure[];
  report_latency: { query: string; p50_ms: number; p99_ms: number }[];
  load_average_before: number[];
  /** What went wrong (an export's row count differing from the journal's). */
  checks: string[];
}

function rssMb(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round((Number(kb) / 1024) * 10) / 10 : 0;
  } catch {
    return 0;
  }
}

const YEAR_MS = 365 * 86_400_000;
const ACCOUNTS = 10_000;
const CHUNK = 1_000_000;

/** Grow the card's journal to `rows` rows with SQL, set-based, in chunks of a million; seconds taken. */
export async function seedJournal(
  pool: pg.Pool,
  t: { tenantId: number; cardId: number },
  rows: number,
  log: (line: string) => void,
): Promise<number> {
  const started = Date.now();
  const { rows: had } = await pool.query<{ n: string }>(
    'SELECT count(*)::text AS n FROM ledger.journal WHERE card_id = $1',
    [t.cardId],
  );
  const add = rows - Number(had[0]!.n);
  if (add <= 0) return 0;
  log(
    `exports: writing ${add.toLocaleString('en-US')} journal rows with SQL (generate_series, ${ACCOUNTS} accounts, over 2025)`,
  );
  await pool.query(
    `INSERT INTO ledger.accounts (card_id, member_id, tenant_id, created_at, updated_at)
     SELECT $1, 900000000 + a, $2, now(), now() FROM generate_series(1, $3::int) a ON CONFLICT DO NOTHING`,
    [t.cardId, t.tenantId, ACCOUNTS],
  );
  for (let lo = 1; lo <= add; lo += CHUNK) {
    const hi = Math.min(add, lo + CHUNK - 1);
    // Row g: account g mod ACCOUNTS, 10 points for a purchase of 10.00, its time spread evenly over the year.
    await pool.query(
      `INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, purchase_cents, reference, metadata, created_at)
       SELECT $1, $2, 900000001 + (g % $5::int), 'staff_added_points', 10, 10 * (g / $5::int + 1), 1000, 'bench-' || g,
              CASE WHEN g % 10 = 0 THEN jsonb_build_object('till', 'T' || (g % 7), 'note', 'bench, "seeded"') END,
              timestamptz '2025-01-01T00:00:00Z' + (g::double precision * $6::double precision) * interval '1 millisecond'
         FROM generate_series($3::int, $4::int) g`,
      [t.tenantId, t.cardId, lo, hi, ACCOUNTS, YEAR_MS / add],
    );
    log(`exports: ${hi.toLocaleString('en-US')} of ${add.toLocaleString('en-US')} rows written`);
  }
  // The accounts as the journal says (balance, entries), each with one spendable lot of its points.
  await pool.query(
    `UPDATE ledger.accounts a SET balance = a.balance + s.total, entries = a.entries + s.n
       FROM (SELECT member_id, sum(amount) AS total, count(*) AS n FROM ledger.journal
              WHERE card_id = $1 AND member_id > 900000000 GROUP BY member_id) s
      WHERE a.card_id = $1 AND a.member_id = s.member_id`,
    [t.cardId],
  );
  await pool.query(
    `INSERT INTO ledger.lots (tenant_id, card_id, member_id, amount, remaining, pending, available_at, created_at)
     SELECT tenant_id, card_id, member_id, balance, balance, false, now(), now() FROM ledger.accounts
      WHERE card_id = $1 AND member_id > 900000000 AND balance > 0`,
    [t.cardId],
  );
  return Math.round((Date.now() - started) / 100) / 10;
}

/** Wait until the ledger has folded the report deltas of the card (its rollups are whole); seconds waited. */
async function folded(pool: pg.Pool, cardId: number, log: (line: string) => void, maxSeconds = 1800): Promise<number> {
  const started = Date.now();
  for (;;) {
    const { rows } = await pool.query<{ n: string }>(
      'SELECT count(*)::text AS n FROM ledger.report_deltas WHERE card_id = $1',
      [cardId],
    );
    const left = Number(rows[0]!.n);
    if (left === 0) return Math.round((Date.now() - started) / 100) / 10;
    if (Date.now() - started > maxSeconds * 1000)
      throw new Error(`report deltas still unfolded after ${maxSeconds} s: ${left}`);
    log(`exports: waiting for the ledger to fold ${left.toLocaleString('en-US')} report deltas into its rollups`);
    await new Promise((r) => setTimeout(r, 10_000));
  }
}

/** Stream one export through the gateway, counting rows and bytes as they come, sampling memory. */
async function exportOnce(
  url: string,
  app: AppCredentials,
  cardId: number,
  format: 'csv' | 'jsonl',
  pids: Record<string, number>,
): Promise<ExportFigure> {
  const watched = Object.entries(pids).filter(([s]) => s === 'gateway' || s === 'ledger');
  const rss: Record<string, { before: number; peak: number }> = Object.fromEntries(
    watched.map(([s, pid]) => [s, { before: rssMb(pid), peak: rssMb(pid) }]),
  );
  const sampler = setInterval(() => {
    for (const [s, pid] of watched) rss[s]!.peak = Math.max(rss[s]!.peak, rssMb(pid));
  }, 100);
  const started = process.hrtime.bigint();
  let bytes = 0;
  let lines = 0;
  try {
    const res = await fetch(`${url}/api/v1/exports/journal?card_id=${cardId}&format=${format}`, {
      headers: { 'x-app-id': app.appId, 'x-api-key': app.apiKey },
    });
    if (res.status !== 200 || !res.body) throw new Error(`export answered ${res.status}: ${await res.text()}`);
    for await (const chunk of res.body) {
      const b = chunk as Uint8Array;
      bytes += b.length;
      for (let i = 0; i < b.length; i++) if (b[i] === 10) lines++;
    }
  } finally {
    clearInterval(sampler);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  // The seeded rows hold no line break inside a field: one line a row (after the CSV header).
  const rows = format === 'csv' ? lines - 1 : lines;
  return {
    format,
    rows,
    bytes,
    seconds: Math.round(seconds * 10) / 10,
    rows_per_second: Math.round(rows / seconds),
    rss_mb: rss,
  };
}

/** Sequential requests of the report over one connection: p50 and p99. */
async function reportLatency(api: Api, app: AppCredentials, cardId: number, query: string, requests = 50) {
  const path = `/api/v1/loyalty/cards/${cardId}/report?${query}`;
  for (let i = 0; i < 5; i++) await api.ok(app, 'GET', path);
  const ms: number[] = [];
  for (let i = 0; i < requests; i++) {
    const t = process.hrtime.bigint();
    await api.ok(app, 'GET', path);
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  ms.sort((a, b) => a - b);
  const at = (p: number) => Math.round(ms[Math.min(ms.length - 1, Math.ceil((p / 100) * ms.length) - 1)]! * 100) / 100;
  return { query, p50_ms: at(50), p99_ms: at(99) };
}

/**
 * The export figures on the card's journal grown to `rows` (rows already there count), through an
 * app of the tenant with `programme_manage` made for it.
 */
export async function measureExports(
  api: Api,
  pool: pg.Pool,
  opts: {
    tenantId: number;
    cardId: number;
    rows: number;
    pids: () => Record<string, number>;
    log: (line: string) => void;
  },
): Promise<ExportsReport> {
  const { app: created } = await api.admin<{ app: { app_id: string; api_key: string } }>(
    'POST',
    `/admin/v1/tenants/${opts.tenantId}/apps`,
    { name: 'bench finance', scopes: ['programme_manage'] },
  );
  const t = { tenantId: opts.tenantId, cardId: opts.cardId, app: { appId: created.app_id, apiKey: created.api_key } };
  const seed = await seedJournal(pool, t, opts.rows, opts.log);
  const fold = await folded(pool, t.cardId, opts.log);
  await pool.query('VACUUM ANALYZE ledger.journal');
  await pool.query('CHECKPOINT').catch(() => undefined);
  const { rows: counted } = await pool.query<{ n: string }>(
    'SELECT count(*)::text AS n FROM ledger.journal WHERE card_id = $1',
    [t.cardId],
  );
  const journalRows = Number(counted[0]!.n);
  const loadBefore = os.loadavg().map((v) => Math.round(v * 100) / 100);
  const exports: ExportFigure[] = [];
  const checks: string[] = [];
  for (const format of ['csv', 'jsonl'] as const) {
    opts.log(
      `exports: the journal of ${journalRows.toLocaleString('en-US')} rows as ${format} (load ${loadBefore.join(' ')})`,
    );
    const figure = await exportOnce(api.url, t.app, t.cardId, format, opts.pids());
    if (figure.rows !== journalRows)
      throw new Error(`the ${format} export has ${figure.rows} rows, the journal ${journalRows}`);
    opts.log(
      `exports: ${format}: ${figure.rows_per_second.toLocaleString('en-US')} rows/s (${figure.rows.toLocaleString('en-US')} rows, ${Math.round(figure.bytes / 1e6)} MB in ${figure.seconds} s); RSS MB ${Object.entries(
        figure.rss_mb,
      )
        .map(([s, m]) => `${s} ${m.before} -> peak ${m.peak}`)
        .join(', ')}`,
    );
    exports.push(figure);
  }
  // The seeded year (2025) by month, its last 30 days by day, and a year across two calendar years
  // by week (its first and last weeks and months only partly in the range). The card's other rows
  // (the provisioning's earns) are of today: a range ending today would hold few seeded rows.
  const reports = [
    await reportLatency(api, t.app, t.cardId, 'from=2025-01-01&to=2025-12-31&granularity=month'),
    await reportLatency(api, t.app, t.cardId, 'from=2025-12-02&to=2025-12-31&granularity=day'),
    await reportLatency(api, t.app, t.cardId, 'from=2025-07-03&to=2026-07-02&granularity=week'),
  ];
  for (const r of reports)
    opts.log(
      `report at ${journalRows.toLocaleString('en-US')} journal rows (${r.query}): p50 ${r.p50_ms} ms, p99 ${r.p99_ms} ms`,
    );
  return {
    journal_rows: journalRows,
    seed_seconds: seed,
    fold_seconds: fold,
    exports,
    report_latency: reports,
    load_average_before: loadBefore,
    checks,
  };
}

/** The figures as a few lines of text. */
export function formatExports(r: ExportsReport): string {
  const lines = [
    `exports of a ${r.journal_rows.toLocaleString('en-US')}-row journal (load average before: ${r.load_average_before.join(' ')}; seeded in ${r.seed_seconds} s, rollups folded in ${r.fold_seconds} s)`,
  ];
  for (const e of r.exports)
    lines.push(
      `  ${e.format.padEnd(5)} ${e.rows_per_second.toLocaleString('en-US')} rows/s, ${Math.round(e.bytes / 1e6)} MB in ${e.seconds} s; RSS MB ${Object.entries(
        e.rss_mb,
      )
        .map(([s, m]) => `${s} ${m.before} -> ${m.peak}`)
        .join(', ')}`,
    );
  for (const q of r.report_latency) lines.push(`  report ${q.query}: p50 ${q.p50_ms} ms, p99 ${q.p99_ms} ms`);
  return lines.join('\n');
}
