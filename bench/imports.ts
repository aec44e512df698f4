// The import figure of `npm run bench`: N members, then N balance lines (one per member), each
// file generated on disk, streamed through the gateway's operator API as the CLI does, validated
// and executed; rows per second per phase and the peak resident memory of every process.
import { createReadStream, createWriteStream, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Api } from './api.ts';
import type { Fixture } from './provision.ts';

export interface ImportPhase {
  kind: 'members' | 'balances';
  rows: number;
  bytes: number;
  upload_s: number;
  validate_s: number;
  execute_s: number;
  total_s: number;
  rows_per_second: number;
  counts: Record<string, number>;
}

export interface ImportsReport {
  rows: number;
  phases: ImportPhase[];
  total_s: number;
  rows_per_second: number;
  /** Peak RSS (VmHWM) of each service process during the imports, and of the bench process over its whole run (it generates and uploads). */
  memory_mb: Record<string, number>;
  checks: string[];
}

/** Start each process's peak resident size (VmHWM) again from its current one (Linux: clear_refs 5). */
function resetPeaks(pids: Record<string, number>): void {
  for (const pid of Object.values(pids)) {
    try {
      writeFileSync(`/proc/${pid}/clear_refs`, '5');
    } catch {
      // not Linux, or not ours: the peak stays the process's lifetime peak
    }
  }
}

/** Peak resident size (VmHWM) of each process since resetPeaks, in MB. */
function peakSince(pids: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [service, pid] of Object.entries(pids)) {
    try {
      const kb = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
      if (kb) out[service] = Math.round(Number(kb) / 102.4) / 10;
    } catch {
      // gone
    }
  }
  return out;
}

/** Write `rows` lines of a file (header first) without holding it in memory. */
async function writeFile(file: string, header: string, rows: number, line: (i: number) => string): Promise<number> {
  const out = createWriteStream(file);
  const batch: string[] = [header];
  for (let i = 1; i <= rows; i++) {
    batch.push(line(i));
    if (batch.length >= 10_000 || i === rows) {
      if (!out.write(`${batch.join('\n')}\n`)) await once(out, 'drain');
      batch.length = 0;
    }
  }
  out.end();
  await once(out, 'finish');
  return statSync(file).size;
}

export async function measureImports(
  api: Api,
  fixture: Fixture,
  opts: {
    rows: number;
    operatorToken: string;
    dir: string;
    /** The service processes (one replica each), whose peak resident memory is measured over the imports alone. */
    pids: Record<string, number>;
    log: (line: string) => void;
  },
): Promise<ImportsReport> {
  const { rows, log } = opts;
  mkdirSync(opts.dir, { recursive: true });
  const tenant = fixture.tenantId;
  const { card } = await api.admin<{ card: { id: number } }>('POST', `/admin/v1/tenants/${tenant}/cards`, {
    name: 'Imported points',
    reward_system: 'points',
    points_ratio: 1,
  });
  const base = `${api.url}/admin/v1/tenants/${tenant}/imports`;
  const auth = { authorization: `Bearer ${opts.operatorToken}` };
  type Answer = { id: string; status: string; counts: Record<string, number> };
  const ask = async (url: string, init: RequestInit = {}): Promise<Answer> => {
    const res = await fetch(url, { ...init, headers: { ...auth, ...(init.headers ?? {}) } });
    const body = (await res.json()) as { success: boolean; data?: Answer; error?: unknown };
    if (!body.success || !body.data) throw new Error(`${url}: ${res.status} ${JSON.stringify(body.error)}`);
    return body.data;
  };
  const until = async (id: string, statuses: string[]): Promise<Answer> => {
    for (;;) {
      const a = await ask(`${base}/${id}`);
      if (statuses.includes(a.status)) return a;
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const run = async (kind: 'members' | 'balances', file: string, query: string): Promise<ImportPhase> => {
    const bytes = statSync(file).size;
    const started = performance.now();
    const created = await ask(`${base}?${query}`, {
      method: 'POST',
      headers: { 'content-type': 'text/csv', 'content-length': String(bytes) },
      body: Readable.toWeb(createReadStream(file)) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    const uploaded = performance.now();
    const validated = await until(created.id, ['validated', 'invalid', 'failed']);
    if (validated.status !== 'validated') throw new Error(`${kind} import: ${validated.status}`);
    const checked = performance.now();
    await ask(`${base}/${created.id}/execute`, { method: 'POST' });
    const done = await until(created.id, ['executed', 'failed']);
    const ended = performance.now();
    const s = (ms: number) => Math.round(ms / 100) / 10;
    const phase: ImportPhase = {
      kind,
      rows,
      bytes,
      upload_s: s(uploaded - started),
      validate_s: s(checked - uploaded),
      execute_s: s(ended - checked),
      total_s: s(ended - started),
      rows_per_second: Math.round((rows * 1000) / (ended - started)),
      counts: done.counts,
    };
    log(
      `imports: ${kind} ${rows.toLocaleString('en-US')} rows (${Math.round(bytes / 1e6)} MB): upload ${phase.upload_s} s, validate ${phase.validate_s} s, execute ${phase.execute_s} s; ${phase.rows_per_second.toLocaleString('en-US')} rows/s`,
    );
    return phase;
  };

  // The peaks of the import alone: each service's high-water mark starts again from its current size.
  resetPeaks(opts.pids);
  const tag = Date.now().toString(36);
  const membersFile = path.join(opts.dir, 'members.csv');
  const balancesFile = path.join(opts.dir, 'balances.csv');
  log(`imports: writing ${rows.toLocaleString('en-US')} members and as many balance lines to ${opts.dir}`);
  await writeFile(
    membersFile,
    'external_id,name,email,joined_at,accepts_emails',
    rows,
    (i) => `${tag}-${i},Member ${i},m${i}.${tag}@bench.example,2021-0${(i % 9) + 1}-1${i % 10},${i % 3 === 0}`,
  );
  await writeFile(
    balancesFile,
    'external_id,member_external_id,points,earned_at,expires_at',
    rows,
    (i) => `b-${i},${tag}-${i},${(i % 500) + 1},2024-0${(i % 9) + 1}-01,${i % 2 === 0 ? '2099-12-31' : ''}`,
  );
  try {
    const phases = [
      await run('members', membersFile, 'kind=members'),
      await run('balances', balancesFile, `kind=balances&card_id=${card.id}`),
    ];
    const total = phases.reduce((a, p) => a + p.total_s, 0);
    const checks: string[] = [];
    for (const p of phases)
      if (p.counts.applied !== rows || p.counts.invalid !== 0)
        checks.push(`${p.kind}: ${JSON.stringify(p.counts)}, expected ${rows} applied`);
    const memory = { ...peakSince(opts.pids), bench: Math.round(process.resourceUsage().maxRSS / 102.4) / 10 };
    return {
      rows,
      phases,
      total_s: Math.round(total * 10) / 10,
      rows_per_second: Math.round((2 * rows) / total),
      memory_mb: memory,
      checks,
    };
  } finally {
    rmSync(opts.dir, { recursive: true, force: true });
  }
}
