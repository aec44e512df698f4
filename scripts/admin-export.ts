// The admin CLI's `export` command: stream a tenant's export from the operator API into a file, as
// it arrives (constant memory, any size), with the bytes so far as progress. The file is written
// under a temporary name and renamed only once the whole body has arrived: a transfer cut short
// (the server gone mid-way) leaves no file that looks complete.
import { createWriteStream, renameSync, rmSync } from 'node:fs';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface ExportIo {
  env: Record<string, string | undefined>;
  out: (text: string) => void;
  err: (text: string) => void;
  fetch: typeof fetch;
  /** Where the progress line is drawn (stderr of a terminal), or nothing. */
  progress?: (line: string) => void;
}

export interface ExportOptions {
  tenant: string;
  entity: string;
  out: string;
  card?: string;
  from?: string;
  to?: string;
  format?: string;
  json: boolean;
}

/** Stream the export into `out`; the exit code (0 written, 1 the API refused or the transfer broke). */
export async function runExport(opts: ExportOptions, io: ExportIo): Promise<number> {
  const base = (io.env.LOYALTY_URL ?? 'http://127.0.0.1:3000').replace(/\/$/, '');
  const format = opts.format ?? (/\.csv$/i.test(opts.out) ? 'csv' : 'jsonl');
  const query = new URLSearchParams({
    format,
    ...(opts.card ? { card_id: opts.card } : {}),
    ...(opts.from ? { from: opts.from } : {}),
    ...(opts.to ? { to: opts.to } : {}),
  });
  const res = await io.fetch(
    `${base}/admin/v1/tenants/${opts.tenant}/exports/${encodeURIComponent(opts.entity)}?${query}`,
    { headers: { authorization: `Bearer ${io.env.OPERATOR_TOKEN ?? ''}` } },
  );
  if (res.status !== 200 || !res.body) {
    const text = await res.text();
    io.err(`export refused (${res.status}): ${text}`);
    return 1;
  }
  const partial = `${opts.out}.part`;
  let bytes = 0;
  const count = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      io.progress?.(`export    ${(bytes / 1e6).toFixed(1)} MB`);
      done(null, chunk);
    },
  });
  const started = Date.now();
  try {
    await pipeline(Readable.fromWeb(res.body as never), count, createWriteStream(partial));
  } catch (err) {
    rmSync(partial, { force: true });
    io.err(`export broke off after ${bytes} bytes: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
  renameSync(partial, opts.out);
  const seconds = (Date.now() - started) / 1000;
  const summary = { file: opts.out, format, bytes, seconds: Math.round(seconds * 10) / 10 };
  io.out(
    opts.json ? JSON.stringify(summary, null, 2) : `${opts.out}: ${bytes} bytes (${format}) in ${summary.seconds} s`,
  );
  return 0;
}
