// The admin CLI's `import` command: stream a file to the operator API, then follow the import's
// jobs with a progress bar (validate, then execute when --execute is given).
import { createReadStream, statSync } from 'node:fs';
import { Readable } from 'node:stream';

export interface ImportIo {
  env: Record<string, string | undefined>;
  out: (text: string) => void;
  err: (text: string) => void;
  fetch: typeof fetch;
  /** Where the progress bar is drawn (stderr of a terminal), or nothing. */
  progress?: (line: string) => void;
}

interface Job {
  status: string;
  progress: { done: number; total: number | null };
  errors: { message: string }[];
  result_url?: string;
}
interface ImportAnswer {
  id: string;
  status: string;
  counts: Record<string, number>;
  validate_job: Job;
  execute_job: Job | null;
}

const bar = (label: string, done: number, total: number | null) => {
  const width = 30;
  const share = total ? Math.min(1, done / total) : 0;
  const filled = Math.round(share * width);
  return `${label.padEnd(9)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${total ? `${Math.round(share * 100)}%` : ''} ${done}${total ? `/${total}` : ''}`;
};

const typeOf = (file: string) => (/\.(jsonl|ndjson)$/i.test(file) ? 'application/x-ndjson' : 'text/csv');

/** Upload, follow, maybe execute; the exit code (0 imported or validated, 1 refused or invalid). */
export async function runImport(
  opts: { tenant: string; kind: string; file: string; card?: string; execute: boolean; json: boolean },
  io: ImportIo,
): Promise<number> {
  const base = (io.env.LOYALTY_URL ?? 'http://127.0.0.1:3000').replace(/\/$/, '');
  const auth = { authorization: `Bearer ${io.env.OPERATOR_TOKEN ?? ''}` };
  const size = statSync(opts.file).size;
  let sent = 0;
  const stream = createReadStream(opts.file);
  stream.on('data', (chunk) => {
    sent += chunk.length;
    io.progress?.(bar('upload', sent, size));
  });
  const query = new URLSearchParams({ kind: opts.kind, ...(opts.card ? { card_id: opts.card } : {}) });
  const res = await io.fetch(`${base}/admin/v1/tenants/${opts.tenant}/imports?${query}`, {
    method: 'POST',
    headers: { ...auth, 'content-type': typeOf(opts.file), 'content-length': String(size) },
    body: Readable.toWeb(stream) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  const created = (await res.json()) as {
    success: boolean;
    data?: ImportAnswer;
    error?: { code: string; message: string };
  };
  if (!created.success || !created.data) {
    io.err(`error ${res.status} ${created.error?.code}: ${created.error?.message}`);
    return 1;
  }
  const path = `${base}/admin/v1/tenants/${opts.tenant}/imports/${created.data.id}`;
  const follow = async (phase: 'validate' | 'execute', until: string[]) => {
    for (;;) {
      const r = (await (await io.fetch(path, { headers: auth })).json()) as { data: ImportAnswer };
      const job = phase === 'validate' ? r.data.validate_job : r.data.execute_job;
      if (job) io.progress?.(bar(phase, job.progress.done, job.progress.total));
      if (until.includes(r.data.status)) return r.data;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  let answer = await follow('validate', ['validated', 'invalid', 'failed']);
  if (answer.status === 'validated' && opts.execute) {
    await io.fetch(`${path}/execute`, { method: 'POST', headers: auth });
    answer = await follow('execute', ['executed', 'failed']);
  }
  io.progress?.('\n');
  if (opts.json) io.out(JSON.stringify(answer, null, 2));
  else {
    io.out(`import: ${answer.id}\nstatus: ${answer.status}`);
    for (const [k, v] of Object.entries(answer.counts)) io.out(`${k}: ${v}`);
    for (const e of answer.validate_job.errors.slice(0, 20)) io.out(`  ${e.message}`);
    if (answer.validate_job.errors.length > 20)
      io.out(`  ... all errors: ${answer.validate_job.result_url ?? '(the validate job result)'}`);
    if (answer.status === 'validated')
      io.out(`execute it: npm run admin -- import:execute --tenant ${opts.tenant} --import ${answer.id}`);
  }
  return answer.status === 'executed' || answer.status === 'validated' ? 0 : 1;
}
