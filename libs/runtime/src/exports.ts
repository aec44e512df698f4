import {
  AppError,
  DOWNLOAD_PAGE_BYTES,
  exportContentTypes,
  Meta,
  exportOperations,
  exportAdminOperations,
  staffOperations,
  AdminMeta,
  DownloadPage,
  DOWNLOAD_PAGE_HEADER,
  StaffMeta,
  type ExportEntity,
  type ServiceName,
} from '@loyalty/contracts';
import { z } from 'zod';
import type { Clock } from './clock.ts';
import { withTransaction, type Pool, type PoolClient, type Queryable } from './db.ts';
import { RawReply, type Endpoints } from './endpoints.ts';
import { jobView } from './job-endpoints.ts';
import { RESULT_PART_BYTES, type JobHandler, type JobStep, type JobStore } from './jobs.ts';

/**
 * Exports, the mechanism the owning services share: a source per entity says which rows, in which
 * order (a unique key, read by keyset, never by offset), as which columns; PostgreSQL writes each
 * page's text itself (CSV lines or JSON Lines, joined into one value per page), so a page costs
 * this process one text value however many rows it holds. A page is at most
 * {@link DOWNLOAD_PAGE_BYTES} (and at least one row); its `next` cursor (the last key read, the
 * range's end fixed when the export started) goes to the gateway and back, so no replica keeps
 * anything between pages. The same pages make the export job's result, stored part by part.
 */

export type ExportFormat = 'csv' | 'jsonl';

export interface ExportRequest {
  tenantId: number;
  entity: ExportEntity;
  cardId: number | null;
  /** Rows created at or after this instant (null: from the first). */
  from: Date | null;
  /** Rows created before this instant (fixed when the export starts). */
  to: Date;
  format: ExportFormat;
  /** Whether `from` or `to` was given (balances are as they stand now: they refuse a range). */
  ranged: boolean;
}

/** One page read by a source: its text (whole lines), how many rows, and where the next starts (null: the end). */
export interface SourcePage {
  text: string;
  rows: number;
  state: unknown;
  done: boolean;
}

export interface ExportSource {
  /** The column names (the CSV header line). */
  columns: string[];
  /** Before the first page (and when a job is asked for): the card exists, the filters apply; an AppError otherwise. */
  check(req: ExportRequest): Promise<void>;
  /** The page after `state` (undefined: the first), of at most `maxRows` rows and `maxBytes` bytes (at least one row). */
  page(req: ExportRequest, state: unknown, limits: { maxRows: number; maxBytes: number }): Promise<SourcePage>;
}

/**
 * A column of an export: its SQL value and how it is written. `cents` is an integer amount of
 * cents written as currency units with two decimals (`-12.05`), by integer arithmetic: exact, and
 * far cheaper per row than a numeric division and cast.
 */
export interface ExportColumn {
  name: string;
  sql: string;
  type: 'number' | 'cents' | 'boolean' | 'text' | 'json' | 'time';
}

/** Cents as currency units with two decimals, as text (null stays null). */
export const centsText = (sql: string) =>
  `(CASE WHEN (${sql}) < 0 THEN '-' ELSE '' END || (abs(${sql}) / 100)::text || '.' || lpad((abs(${sql}) % 100)::text, 2, '0'))`;

/** An instant as text, UTC, to the microsecond (what PostgreSQL keeps): `2024-03-01T10:00:00.123456Z`. */
export const isoTime = (sql: string) => `to_char((${sql}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** RFC 4180: a field holding a comma, a quote or a line break is quoted, its quotes doubled; null is empty. */
const csvQuoted = (text: string) =>
  `coalesce(CASE WHEN ${text} ~ '[",\\r\\n]' THEN '"' || replace(${text}, '"', '""') || '"' ELSE ${text} END, '')`;

function csvCell(c: ExportColumn): string {
  if (c.type === 'text') return csvQuoted(`(${c.sql})`);
  if (c.type === 'json') return csvQuoted(`(${c.sql})::text`);
  if (c.type === 'time') return `coalesce(${isoTime(c.sql)}, '')`;
  if (c.type === 'cents') return `coalesce(${centsText(c.sql)}, '')`;
  return `coalesce((${c.sql})::text, '')`;
}

/** A column's JSON value as text (`null` for null): what `row_to_json` writes, without building a row. */
function jsonCell(c: ExportColumn): string {
  if (c.type === 'text') return `coalesce(to_json(${c.sql})::text, 'null')`;
  if (c.type === 'time') return `coalesce('"' || ${isoTime(c.sql)} || '"', 'null')`;
  if (c.type === 'cents') return `coalesce(${centsText(c.sql)}, 'null')`;
  return `coalesce((${c.sql})::text, 'null')`;
}

/**
 * A row's line in `format`, as one SQL text expression. JSON Lines are concatenated text (names
 * fixed, values escaped by to_json where they are text): `row_to_json` over a row of the columns
 * wrote the same bytes at about twice the cost a row.
 */
function lineOf(columns: ExportColumn[], format: ExportFormat): string {
  if (format === 'jsonl')
    return `'{' || ${columns.map((c, i) => `'${i === 0 ? '' : ','}${JSON.stringify(c.name)}:' || ${jsonCell(c)}`).join(' || ')} || E'}\\n'`;
  return `${columns.map(csvCell).join(` || ',' || `)} || E'\\r\\n'`;
}

/** A key column of the keyset (unique together, in this order), read back as text. */
export interface ExportKey {
  sql: string;
  type: 'bigint' | 'timestamptz';
}

const keyText = (k: ExportKey) => (k.type === 'timestamptz' ? isoTime(k.sql) : `(${k.sql})::text`);

/**
 * The statements of a page read by `page` (a `page` CTE of keys and lines). The usual page: every
 * row read fits (the read was sized by the bytes a row took so far, a little under), so the lines
 * are joined as they are (`whole`). Only when they do not (its `text` null) is the page read
 * again and cut by the running sum of its lines' sizes, a window over every row (`cut`).
 */
function pageQueries(page: string, keys: (ExportKey & { alias: string })[], budget: string) {
  const cutOrder = keys.map((k) => k.alias).join(', ');
  const lastOf = (from: string, order: string) =>
    keys.map(
      (k) => `(SELECT ${keyText({ ...k, sql: k.alias })} FROM ${from} ORDER BY ${order} LIMIT 1) AS last_${k.alias}`,
    );
  const whole = `${page}, size AS (SELECT coalesce(sum(octet_length(line)), 0) AS bytes, count(*)::int AS n FROM page)
    SELECT CASE WHEN (SELECT bytes FROM size) <= ${budget} OR (SELECT n FROM size) = 1
                THEN coalesce((SELECT string_agg(line, '' ORDER BY ${cutOrder}) FROM page), '') END AS text,
           (SELECT n FROM size) AS rows, (SELECT n FROM size) AS fetched,
           ${lastOf('page', keys.map((k) => `${k.alias} DESC`).join(', '))}`;
  const cut = `${page}, cut AS (
      SELECT *, sum(octet_length(line)) OVER w AS run, row_number() OVER w AS n
        FROM page WINDOW w AS (ORDER BY ${cutOrder})
    ), kept AS (
      SELECT * FROM cut WHERE run <= ${budget} OR n = 1
    )
    SELECT coalesce((SELECT string_agg(line, '' ORDER BY n) FROM kept), '') AS text,
           (SELECT count(*) FROM kept)::int AS rows,
           (SELECT count(*) FROM page)::int AS fetched,
           ${lastOf('kept', 'n DESC')}`;
  return { whole, cut };
}

/**
 * One page of rows in key order after `after` (the last key of the page before, as text), written
 * by PostgreSQL: `from` the tables, `where` the filter (its parameters `params`, `$1`...). Rows are
 * read up to `maxRows` and cut where their running size passes `maxBytes` (one row at least).
 * `last` is the key of the last row kept; `more` whether rows may follow.
 */
export async function sqlExportPage(
  db: Queryable,
  spec: {
    columns: ExportColumn[];
    format: ExportFormat;
    from: string;
    where: string;
    params: unknown[];
    keys: ExportKey[];
    after: string[] | null;
    maxRows: number;
    maxBytes: number;
  },
): Promise<{ text: string; rows: number; last: string[] | null; more: boolean }> {
  const params = [...spec.params];
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const keys = spec.keys.map((k, i) => ({ ...k, alias: `k${i}` }));
  const prior = spec.after;
  const after = prior
    ? ` AND (${keys.map((k) => k.sql).join(', ')}) > (${keys.map((k, i) => `${p(prior[i])}::${k.type}`).join(', ')})`
    : '';
  const limit = p(spec.maxRows);
  const budget = p(spec.maxBytes);
  const order = keys.map((k) => k.sql).join(', ');
  const page = `
    WITH page AS (
      SELECT ${keys.map((k) => `${k.sql} AS ${k.alias}`).join(', ')},
             ${lineOf(spec.columns, spec.format)} AS line
        FROM ${spec.from}
       WHERE ${spec.where}${after}
       ORDER BY ${order}
       LIMIT ${limit}
    )`;
  const { whole, cut } = pageQueries(page, keys, budget);
  let { rows } = await db.query<Record<string, string | number | null>>(whole, params);
  if (rows[0] && rows[0].text === null)
    ({ rows } = await db.query<Record<string, string | number | null>>(cut, params));
  const row = rows[0];
  if (!row) throw new Error('an export page read no summary row');
  const kept = Number(row.rows);
  const last = kept === 0 ? null : keys.map((k) => String(row[`last_${k.alias}`]));
  // Rows may follow when the page was cut by its size or read as many rows as it could.
  const more = kept > 0 && (kept < Number(row.fetched) || Number(row.fetched) === spec.maxRows);
  return { text: String(row.text), rows: kept, last, more };
}

const Cursor = z.object({
  /** The range's end, fixed by the first page. */
  to: z.string(),
  /** The source's position. */
  s: z.unknown(),
  /** Bytes per row so far (sizes the next page's read). */
  b: z.number().positive(),
});

const encode = (c: z.output<typeof Cursor>) => Buffer.from(JSON.stringify(c)).toString('base64url');
function decode(text: string): z.output<typeof Cursor> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString());
  } catch {
    value = undefined;
  }
  const c = Cursor.safeParse(value);
  if (!c.success || Number.isNaN(Date.parse(c.data.to)))
    throw new AppError('validation_error', 'Invalid request: cursor.', {
      fields: [{ field: 'cursor', message: 'is not a cursor of this export' }],
    });
  return c.data;
}

/**
 * Rows to read for a page of `bytes` at `perRow` bytes a row: a little under, so that the rows read
 * usually fit whole and the page needs no cut (a page cut by size is read twice).
 */
const rowsFor = (bytes: number, perRow: number) => Math.max(50, Math.min(20_000, Math.floor((bytes / perRow) * 0.97)));
/** A first guess of a row's size, before a page says. */
const FIRST_GUESS = 200;

/**
 * The instants a query's `from`/`to` stand for: a date is its start (UTC), a `to` date counts whole
 * (before the next day's start); `to` absent is `now`. A `from` not before `to` is a validation error.
 */
export function exportRange(q: { from?: string; to?: string }, now: Date): { from: Date | null; to: Date } {
  const isDay = (v: string) => /^\d{4}-\d{2}-\d{2}$/.test(v);
  const from = q.from === undefined ? null : new Date(isDay(q.from) ? `${q.from}T00:00:00Z` : q.from);
  let to = q.to === undefined ? now : new Date(isDay(q.to) ? `${q.to}T00:00:00Z` : q.to);
  if (q.to !== undefined && isDay(q.to)) to = new Date(to.getTime() + 86_400_000);
  if (from && from >= to)
    throw new AppError('validation_error', 'Invalid request: from.', {
      fields: [{ field: 'from', message: 'must be before to' }],
    });
  return { from, to };
}

/** A page as answered (its description, `DownloadPage`, in a header; its bytes the payload), and its `next`. */
interface PageReply {
  reply: RawReply;
  next: string | null;
}

/** Pages read ahead at most at once in a replica (each at most a page's bytes). */
const AHEAD_PAGES = 8;
/** A page read ahead and not asked for within this is dropped (the client went away, or another replica was asked). */
const AHEAD_TTL_MS = 30_000;

/**
 * Pages read ahead of streamed exports. A keyset page needs the last key of the page before, so
 * the pages of one export are read one after another; read only when asked, each page's read
 * waited on the trip of the one before to the client and back. When a page has a next one, that
 * one is read at once and kept here until the gateway asks for it (by the same tenant, export and
 * cursor), so PostgreSQL writes a page while the one before travels. Nothing depends on it: a page
 * asked of another replica, or after its time, or when this holds {@link AHEAD_PAGES} already, is
 * read as usual (with several replicas some pages read ahead are read twice).
 */
class ReadAhead {
  private readonly pages = new Map<string, { until: number; page: Promise<PageReply> }>();

  private key(tenantId: number, input: z.output<typeof PageInput>): string {
    return JSON.stringify([
      tenantId,
      input.entity,
      input.card_id ?? null,
      input.from ?? null,
      input.to ?? null,
      input.format,
      input.cursor,
    ]);
  }

  /** The page read ahead for this request, once (undefined: none). */
  take(tenantId: number, input: z.output<typeof PageInput>): Promise<PageReply> | undefined {
    const key = this.key(tenantId, input);
    const found = this.pages.get(key);
    this.pages.delete(key);
    return found && found.until > Date.now() ? found.page : undefined;
  }

  /** Read this page now, unless as many are held already. */
  offer(tenantId: number, input: z.output<typeof PageInput>, read: () => Promise<PageReply>): void {
    const now = Date.now();
    for (const [key, held] of this.pages) if (held.until <= now) this.pages.delete(key);
    if (this.pages.size >= AHEAD_PAGES) return;
    const page = read();
    // A page never asked for must not be an unhandled rejection; one asked for is read again.
    page.catch(() => undefined);
    this.pages.set(this.key(tenantId, input), { until: now + AHEAD_TTL_MS, page });
  }
}

const EXPORT_JOB = 'export';
const StartInput = z.object({
  entity: z.string(),
  card_id: z.number().int().positive().optional(),
  from: z.string().optional(),
  to: z.string().optional(),
  format: z.enum(['csv', 'jsonl']),
});
const PageInput = StartInput.extend({ cursor: z.string().nullable() });
type StartInputT = z.output<typeof StartInput>;

const JobParams = z.object({
  entity: z.string(),
  card_id: z.number().nullable(),
  from: z.string().nullable(),
  to: z.string(),
  format: z.enum(['csv', 'jsonl']),
  ranged: z.boolean(),
});
interface JobCheckpoint {
  s: unknown;
  size: number;
  rows: number;
  b: number;
  done: boolean;
}
/** Bytes an export job writes per step (one transaction): a few pages. */
const STEP_BYTES = 4 * DOWNLOAD_PAGE_BYTES;

export class Exports {
  private readonly ahead = new ReadAhead();

  constructor(
    private readonly opts: {
      pool: Pool;
      service: ServiceName;
      jobs: { store: JobStore; wake(): void };
      clock: Clock;
      sources: Partial<Record<ExportEntity, ExportSource>>;
      /** The operator names a tenant: tenant_not_found unless it exists. */
      tenantMustExist: (tenantId: number, requestId: string) => Promise<void>;
    },
  ) {}

  /** Before the operator's export of a tenant (the merchant API's and the console's are their own tenant's). */
  tenantMustExist(tenantId: number, requestId: string): Promise<void> {
    return this.opts.tenantMustExist(tenantId, requestId);
  }

  private source(entity: string): [ExportEntity, ExportSource] {
    const found = Object.entries(this.opts.sources).find(([k]) => k === entity);
    // The gateway routes only this service's entities here; anything else is not an export.
    if (!found) throw new AppError('unknown_export');
    // eslint-disable-next-line @typescript-eslint/consistent-type-assertions -- a key of the sources table
    return [found[0] as ExportEntity, found[1]];
  }

  private request(tenantId: number, input: StartInputT, to: Date | null): ExportRequest {
    const [entity] = this.source(input.entity);
    const range = exportRange(input, this.opts.clock.now());
    return {
      tenantId,
      entity,
      cardId: input.card_id ?? null,
      from: range.from,
      to: to ?? range.to,
      format: input.format,
      ranged: input.from !== undefined || input.to !== undefined,
    };
  }

  private filename(req: ExportRequest): string {
    // A range ending after 9999 (to=9999-12-31 ends at 10000-01-01) is written with its expanded
    // year's sign and zeros ("+010000-..."): the stamp keeps only the year's digits.
    const stamp = req.to
      .toISOString()
      .replace(/^\+0*(?=\d{5})/, '')
      .replace(/[-:]/g, '')
      .replace(/\.\d+Z$/, 'Z');
    const card = req.cardId === null ? '' : `-card-${req.cardId}`;
    return `${req.entity}${card}-${stamp}.${req.format === 'csv' ? 'csv' : 'jsonl'}`;
  }

  /**
   * One page of a streamed export (`cursor` null: the first, with the CSV header). The page after
   * it is read at once, while this one travels to the client ({@link ReadAhead}).
   */
  async download(tenantId: number, input: z.output<typeof PageInput>): Promise<RawReply> {
    const early = input.cursor === null ? undefined : this.ahead.take(tenantId, input);
    const page = (early && (await early.catch(() => undefined))) ?? (await this.readPage(tenantId, input));
    if (page.next !== null) {
      const next = { ...input, cursor: page.next };
      this.ahead.offer(tenantId, next, () => this.readPage(tenantId, next));
    }
    return page.reply;
  }

  private async readPage(tenantId: number, input: z.output<typeof PageInput>): Promise<PageReply> {
    const cursor = input.cursor === null ? null : decode(input.cursor);
    const req = this.request(tenantId, input, cursor ? new Date(cursor.to) : null);
    const [, source] = this.source(input.entity);
    if (!cursor) await source.check(req);
    const perRow = cursor?.b ?? FIRST_GUESS;
    const header = !cursor && req.format === 'csv' ? `${source.columns.join(',')}\r\n` : '';
    const page = await source.page(req, cursor?.s, {
      maxRows: rowsFor(DOWNLOAD_PAGE_BYTES - header.length, perRow),
      maxBytes: DOWNLOAD_PAGE_BYTES - Buffer.byteLength(header),
    });
    const body = Buffer.from(header + page.text);
    const b = page.rows > 0 ? (body.length - Buffer.byteLength(header)) / page.rows : perRow;
    const next = page.done ? null : encode({ to: req.to.toISOString(), s: page.state, b });
    const described: z.input<typeof DownloadPage> = {
      content_type: exportContentTypes[req.format],
      filename: this.filename(req),
      rows: page.rows,
      next,
    };
    return { reply: new RawReply(DOWNLOAD_PAGE_HEADER, described, body), next };
  }

  /** Queue the export as a job (the same file, stored as the job's result). */
  async start(tenantId: number, input: StartInputT) {
    const { store } = this.opts.jobs;
    const req = this.request(tenantId, input, null);
    await this.source(input.entity)[1].check(req);
    const params: z.output<typeof JobParams> = {
      entity: req.entity,
      card_id: req.cardId,
      from: req.from?.toISOString() ?? null,
      to: req.to.toISOString(),
      format: req.format,
      ranged: req.ranged,
    };
    const id = await withTransaction(this.opts.pool, (db) =>
      store.create(db, { tenantId, kind: `${EXPORT_JOB}.${req.entity}`, params, now: this.opts.clock.now() }),
    );
    this.opts.jobs.wake();
    const job = await store.find(tenantId, id);
    if (!job) throw new AppError('job_not_found');
    return { job: jobView(store, job, '/api/v1', this.opts.clock.now()) };
  }

  /** The job kinds of this service's exports (`export.<entity>`). */
  handlers(): Record<string, JobHandler<never>> {
    const kinds = Object.keys(this.opts.sources).map((entity) => [`${EXPORT_JOB}.${entity}`, this.job()] as const);
    return Object.fromEntries(kinds);
  }

  private job(): JobHandler<never> {
    const handler: JobHandler<JobCheckpoint> = async (step) => {
      const p = JobParams.parse(step.params);
      const [entity, source] = this.source(p.entity);
      const req: ExportRequest = {
        tenantId: step.tenantId,
        entity,
        cardId: p.card_id,
        from: p.from === null ? null : new Date(p.from),
        to: new Date(p.to),
        format: p.format,
        ranged: p.ranged,
      };
      const c = step.checkpoint ?? { s: undefined, size: 0, rows: 0, b: FIRST_GUESS, done: false };
      if (c.done) {
        await step.succeed(
          async (db) => {
            // An empty export still has its (empty) first part to download.
            if (c.size === 0) await step.appendResult(db, 0, Buffer.alloc(0));
          },
          {
            done: c.rows,
            total: c.rows,
            result: { contentType: exportContentTypes[req.format], stored: true, size: c.size },
          },
        );
        return 'finished';
      }
      // A few pages read outside the step's transaction, then stored with the checkpoint.
      const pieces: Buffer[] = [];
      let next = { ...c };
      if (c.s === undefined && c.size === 0 && req.format === 'csv')
        pieces.push(Buffer.from(`${source.columns.join(',')}\r\n`));
      let bytes = pieces.reduce((n, b) => n + b.length, 0);
      while (!next.done && bytes < STEP_BYTES) {
        const page = await source.page(req, next.s, {
          maxRows: rowsFor(DOWNLOAD_PAGE_BYTES, next.b),
          maxBytes: DOWNLOAD_PAGE_BYTES,
        });
        const piece = Buffer.from(page.text);
        pieces.push(piece);
        bytes += piece.length;
        next = {
          s: page.state,
          size: next.size,
          rows: next.rows + page.rows,
          b: page.rows > 0 ? piece.length / page.rows : next.b,
          done: page.done,
        };
      }
      const data = Buffer.concat(pieces);
      next.size = c.size + data.length;
      await step.commit((db) => appendFilled(step, db, c.size, data), { checkpoint: next, done: next.rows });
      return 'more';
    };
    // eslint-disable-next-line @typescript-eslint/consistent-type-assertions -- the runner hands back what this handler committed
    return handler as unknown as JobHandler<never>;
  }
}

/** Append `data` to a result of `size` bytes so far, filling each part to RESULT_PART_BYTES. */
async function appendFilled(step: JobStep<unknown>, db: PoolClient, size: number, data: Buffer): Promise<void> {
  let rest = data;
  let at = size;
  while (rest.length > 0) {
    const chunk = rest.subarray(0, RESULT_PART_BYTES - (at % RESULT_PART_BYTES));
    await step.appendResult(db, Math.floor(at / RESULT_PART_BYTES), chunk);
    at += chunk.length;
    rest = rest.subarray(chunk.length);
  }
}

const TenantInput = z.object({ tenant_id: z.number().int().positive() });

/**
 * The export operations of a service (routed by entity): a page of the stream and the job (the
 * merchant API), a page of the operator's stream (any tenant's, the path names it) and of the
 * console's (managers, their own tenant's). The operator's first page asks whether the tenant
 * exists (tenant_not_found otherwise): a mistyped tenant id was streamed as an empty file.
 */
export function addExportEndpoints(endpoints: Endpoints, exports: Exports): Endpoints {
  const ops = exportOperations;
  return endpoints
    .routed(ops['exports.download'].operation, Meta, PageInput, (d, x) => exports.download(x.meta.tenant_id, d))
    .routed(ops['exports.create'].operation, Meta, StartInput, (d, x) => exports.start(x.meta.tenant_id, d))
    .routed(
      exportAdminOperations['admin.exports.download'].operation,
      AdminMeta,
      PageInput.extend(TenantInput.shape),
      async (d, x) => {
        if (d.cursor === null) await exports.tenantMustExist(d.tenant_id, x.meta.request_id);
        return exports.download(d.tenant_id, d);
      },
    )
    .routed(staffOperations['staff.exports.download'].operation, StaffMeta, PageInput, (d, x) => {
      if (x.meta.staff.role !== 'manager') return Promise.reject(new AppError('insufficient_role'));
      return exports.download(x.meta.tenant_id, d);
    });
}
