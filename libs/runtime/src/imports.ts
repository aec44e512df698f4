import {
  AdminMeta,
  AppError,
  importAdminOperations,
  importOperations,
  Meta,
  staffOperations,
  StaffMeta,
  type ImportKind,
  UploadChunk,
  type ImportRecord,
  type ServiceName,
} from '@loyalty/contracts';
import * as z from 'zod';
import type { Endpoints } from './endpoints.ts';
import { withTransaction, type Pool, type PoolClient, type Queryable } from './db.ts';
import { readRecords, type FileRecord, type ReadState } from './import-files.ts';
import { jobView, resultPart } from './job-endpoints.ts';
import type { JobError, JobHandler, JobStore } from './jobs.ts';

/**
 * Bulk imports, the mechanism every owning service shares (its schema holds `imports`,
 * `import_chunks`, `import_errors` and a staging table per kind): the upload stored piece by piece
 * as the gateway forwards it, a validate job that reads the stored pieces a few at a time, checks
 * every record and stages the good ones (each step committed with its checkpoint: where it is in
 * the file), and an execute job that merges the staged rows into the service's tables in
 * set-based steps, each committed with its checkpoint (the last line merged). A kind says what
 * its rows are and how they are checked, staged and merged.
 */
export interface RowProblem {
  line: number;
  column: string;
  reason: string;
}

export interface ImportContext {
  importId: string;
  publicId: string;
  tenantId: number;
  cardId: number | null;
}

export interface ImportKindSpec<Row> {
  /** Check one record's fields: a row to stage, or what is wrong (column and reason). */
  parse(fields: Map<string, string>, ctx: ImportContext): Row | { column: string; reason: string }[];
  /** Outside any transaction (other services may be asked): refuse rows that name unknown things. */
  resolve?(rows: { line: number; row: Row }[], ctx: ImportContext): Promise<RowProblem[]>;
  /** In the step's transaction: stage the rows; the lines it refused (duplicates, conflicts). */
  stage(db: PoolClient, rows: { line: number; row: Row }[], ctx: ImportContext): Promise<RowProblem[]>;
  /** The staging table of the kind (in the service's schema), keyed by (import_id, line). */
  staging: string;
  /** In the step's transaction: merge the staged rows with afterLine < line <= upToLine; how many changed something. */
  merge(db: PoolClient, afterLine: number, upToLine: number, ctx: ImportContext): Promise<number>;
  /** Staged lines merged per execute step (default 5,000). */
  mergeBatch?: number;
  /**
   * The service's tables the merge writes (schema-qualified). Their planner statistics are taken
   * again when the import is executed: a bulk load leaves them describing the tables as they were.
   * A members table last analyzed with 20 members and no external ids was scanned in full, 1,000,000
   * rows, for each 5,000 ids a balances import looked up right after (0.9 s a look-up instead of
   * tens of ms); autovacuum would take them too, but later. Taking them during the load as well
   * (every 200,000 lines, and the staging table's) made the execute slower than it saved.
   */
  writes?: string[];
  /** In the create request's transaction: the card must exist (balances), else card_not_found. */
  check?(db: Queryable, ctx: ImportContext): Promise<void>;
}

type Record = z.output<typeof ImportRecord>;
interface ImportRow {
  id: string;
  tenant_id: string;
  kind: ImportKind;
  card_id: string | null;
  format: 'csv' | 'jsonl';
  status: string;
  bytes: string;
  chunks: number;
  lines: string;
  valid: string;
  invalid: string;
  applied: string;
  unchanged: string;
  validate_job: string | null;
  execute_job: string | null;
  created_at: Date;
}

/** Errors listed in the validate job (all of them are in its error file, up to FILE_ERRORS). */
const LISTED_ERRORS = 1000;
const FILE_ERRORS = 100_000;
/** Stored pieces read per validate step (about 768 KB of the file: the lines a step holds at once). */
const CHUNKS_PER_STEP = 2;
/** A record longer than this is refused (an unclosed quote swallowing the file). */
const MAX_CARRY = 1024 * 1024;
const MERGE_BATCH = 5000;

interface ValidateCheckpoint {
  seq: number;
  carry: string;
  state: ReadState;
}

export class Imports {
  constructor(
    private readonly pool: Pool,
    private readonly service: ServiceName,
    private readonly jobs: { store: JobStore; wake(): void },
    private readonly kinds: Partial<{ [K in ImportKind]: ImportKindSpec<never> }>,
    private readonly now: () => Date,
  ) {}

  private get schema(): string {
    return this.service;
  }

  publicId(id: string): string {
    return `imp_${this.service}_${id}`;
  }

  /** One piece of an upload (`UploadChunk`): stored; the last one queues the validate job and answers the import. */
  async receive(
    tenantId: number,
    input: {
      kind: string;
      card_id?: number;
      upload: { id: string; seq: number; data: string; last: boolean; content_type: string };
    },
  ): Promise<Record | { received: number }> {
    const { upload } = input;
    const spec = this.spec(input.kind);
    const ctx = { importId: upload.id, publicId: this.publicId(upload.id), tenantId, cardId: input.card_id ?? null };
    const done = await withTransaction(this.pool, async (db) => {
      if (upload.seq === 0) {
        if (spec.check) await spec.check(db, ctx);
        else if (input.card_id !== undefined) ctx.cardId = null;
        const format = upload.content_type === 'text/csv' ? 'csv' : 'jsonl';
        await db.query(
          `INSERT INTO ${this.schema}.imports (id, tenant_id, kind, card_id, format, status, created_at)
           VALUES ($1, $2, $3, $4, $5, 'uploading', $6) ON CONFLICT (id) DO NOTHING`,
          [upload.id, tenantId, input.kind, ctx.cardId, format, this.now()],
        );
      }
      const { rows } = await db.query<{ status: string }>(
        `SELECT status FROM ${this.schema}.imports WHERE id = $1 AND tenant_id = $2 FOR UPDATE`,
        [upload.id, tenantId],
      );
      if (rows[0]?.status !== 'uploading') throw new AppError('import_not_found');
      const data = Buffer.from(upload.data, 'base64');
      await db.query(
        `INSERT INTO ${this.schema}.import_chunks (import_id, seq, data) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
        [upload.id, upload.seq, data],
      );
      if (!upload.last) return false;
      const { rows: n } = await db.query<{ chunks: string; bytes: string }>(
        `SELECT count(*)::text AS chunks, coalesce(sum(length(data)), 0)::text AS bytes
           FROM ${this.schema}.import_chunks WHERE import_id = $1`,
        [upload.id],
      );
      if (Number(n[0]?.chunks) !== upload.seq + 1) throw new AppError('import_not_found', 'The upload is incomplete.');
      const job = await this.jobs.store.create(db, {
        tenantId,
        kind: 'import.validate',
        params: { import_id: upload.id },
        now: this.now(),
      });
      await db.query(
        `UPDATE ${this.schema}.imports SET status = 'validating', chunks = $2, bytes = $3, validate_job = $4 WHERE id = $1`,
        [upload.id, upload.seq + 1, Number(n[0]?.bytes), this.jobs.store.rowId(job)],
      );
      return true;
    });
    if (!done) return { received: upload.seq };
    this.jobs.wake();
    return this.view(tenantId, ctx.publicId);
  }

  /** The import as the API shows it; not found for another tenant's or an unfinished upload. */
  async view(tenantId: number, publicId: string): Promise<Record> {
    const row = await this.find(tenantId, publicId);
    const job = async (id: string | null) => {
      const j = id ? await this.jobs.store.find(tenantId, this.jobs.store.publicId(id)) : undefined;
      return j ? jobView(this.jobs.store, j, '/api/v1', this.now()) : null;
    };
    const validate = await job(row.validate_job);
    if (!validate) throw new AppError('import_not_found');
    const execute = await job(row.execute_job);
    // A job that failed for good (its attempts spent on an error the import did not foresee) does
    // not come back to set the import's status: the import has failed with it.
    const failed =
      (row.status === 'validating' && validate.status === 'failed') ||
      (row.status === 'executing' && execute?.status === 'failed');
    return {
      id: this.publicId(row.id),
      kind: row.kind,
      card_id: row.card_id === null ? null : Number(row.card_id),
      format: row.format,
      status: failed ? 'failed' : statusOf(row.status),
      bytes: Number(row.bytes),
      counts: {
        lines: Number(row.lines),
        valid: Number(row.valid),
        invalid: Number(row.invalid),
        applied: Number(row.applied),
        unchanged: Number(row.unchanged),
      },
      validate_job: validate,
      execute_job: execute,
      created_at: row.created_at.toISOString(),
    };
  }

  /**
   * The import as the staff API shows it: the error file is downloaded from the import itself
   * (`/staff/v1/imports/{id}/errors`), as the console's staff token reaches no `/api/v1` path.
   */
  async staffView(tenantId: number, publicId: string): Promise<Record> {
    const record = await this.view(tenantId, publicId);
    const staffJob = (job: Record['validate_job'], url: string | undefined): Record['validate_job'] => {
      const { result_url, ...rest } = job;
      return result_url !== undefined && url !== undefined ? { ...rest, result_url: url } : rest;
    };
    return {
      ...record,
      validate_job: staffJob(record.validate_job, `/staff/v1/imports/${record.id}/errors`),
      execute_job: record.execute_job ? staffJob(record.execute_job, undefined) : null,
    };
  }

  /** One part of an import's error file (its validate job's result), for the gateway to stream. */
  async errorFilePart(tenantId: number, publicId: string, part: number) {
    const row = await this.find(tenantId, publicId);
    if (!row.validate_job) throw new AppError('job_result_not_found');
    const jobId = this.jobs.store.publicId(row.validate_job);
    return resultPart(this.jobs.store, tenantId, { job_id: jobId, part }, this.now());
  }

  /** Queue the execute job of a validated import (the same job when asked again). */
  async execute(tenantId: number, publicId: string): Promise<Record> {
    const row = await this.find(tenantId, publicId);
    await withTransaction(this.pool, async (db) => {
      const { rows } = await db.query<{ status: string; execute_job: string | null }>(
        `SELECT status, execute_job FROM ${this.schema}.imports WHERE id = $1 FOR UPDATE`,
        [row.id],
      );
      const current = rows[0];
      if (!current || current.execute_job) return;
      if (current.status !== 'validated') throw new AppError('import_not_validated');
      const job = await this.jobs.store.create(db, {
        tenantId,
        kind: 'import.execute',
        params: { import_id: row.id },
        now: this.now(),
      });
      await db.query(`UPDATE ${this.schema}.imports SET status = 'executing', execute_job = $2 WHERE id = $1`, [
        row.id,
        this.jobs.store.rowId(job),
      ]);
    });
    this.jobs.wake();
    return this.view(tenantId, publicId);
  }

  private async find(tenantId: number, publicId: string): Promise<ImportRow> {
    const prefix = `imp_${this.service}_`;
    const id = publicId.startsWith(prefix) ? publicId.slice(prefix.length) : '';
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id))
      throw new AppError('import_not_found');
    const { rows } = await this.pool.query<ImportRow>(
      `SELECT * FROM ${this.schema}.imports WHERE id = $1 AND tenant_id = $2 AND status <> 'uploading'`,
      [id, tenantId],
    );
    if (!rows[0]) throw new AppError('import_not_found');
    return rows[0];
  }

  private spec(kind: string): ImportKindSpec<never> {
    const spec = Object.entries(this.kinds).find(([k]) => k === kind)?.[1];
    if (!spec) throw new AppError('unknown_import_kind');
    return spec;
  }

  private async load(id: string): Promise<ImportRow> {
    const { rows } = await this.pool.query<ImportRow>(`SELECT * FROM ${this.schema}.imports WHERE id = $1`, [id]);
    if (!rows[0]) throw new Error(`import ${id} is gone`);
    return rows[0];
  }

  private contextOf(row: ImportRow): ImportContext {
    return {
      importId: row.id,
      publicId: this.publicId(row.id),
      tenantId: Number(row.tenant_id),
      cardId: row.card_id === null ? null : Number(row.card_id),
    };
  }

  /** The job kinds of imports: validate and execute. */
  handlers(): { 'import.validate': JobHandler<ValidateCheckpoint>; 'import.execute': JobHandler<{ line: number }> } {
    return { 'import.validate': (step) => this.validateStep(step), 'import.execute': (step) => this.executeStep(step) };
  }

  private async validateStep(step: Parameters<JobHandler<ValidateCheckpoint>>[0]): Promise<'more' | 'finished'> {
    const id = idParam(step.params);
    const row = await this.load(id);
    const spec = this.spec(row.kind);
    const ctx = this.contextOf(row);
    const at = step.checkpoint ?? { seq: 0, carry: '', state: { line: 1, header: null } };
    if (at.seq >= row.chunks && at.carry === '') return this.finishValidation(step, row);
    const { rows: pieces } = await this.pool.query<{ data: Buffer }>(
      `SELECT data FROM ${this.schema}.import_chunks WHERE import_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`,
      [id, at.seq, CHUNKS_PER_STEP],
    );
    const next = at.seq + pieces.length;
    const final = next >= row.chunks;
    const bytes = Buffer.concat([Buffer.from(at.carry, 'base64'), ...pieces.map((p) => p.data)]);
    const read = readRecords(row.format, bytes, final, at.state);
    if (read.rest.length > MAX_CARRY) {
      await step.fail([
        {
          code: 'import_record_too_long',
          message: `A record from line ${read.state.line} is longer than 1 MB (an unclosed quote?).`,
        },
      ]);
      await this.pool.query(`UPDATE ${this.schema}.imports SET status = 'failed' WHERE id = $1`, [id]);
      return 'finished';
    }
    if (row.format === 'csv' && final && !read.state.header)
      read.records.push({ line: 1, problem: { column: '(header)', reason: 'the file has no header line' } });
    const { good, problems } = this.check(spec, read.records, ctx);
    problems.push(...((await spec.resolve?.(good, ctx)) ?? []));
    const refused = new Set(problems.map((p) => p.line));
    const staged = good.filter((g) => !refused.has(g.line));
    const lines = read.records.length;
    await step.commit(
      async (db) => {
        const more = await spec.stage(db, staged, ctx);
        problems.push(...more);
        await this.saveProblems(db, id, problems);
        const invalid = new Set(problems.map((p) => p.line)).size;
        await db.query(
          `UPDATE ${this.schema}.imports SET lines = lines + $2, invalid = invalid + $3, valid = valid + $4 WHERE id = $1`,
          [id, lines, invalid, lines - invalid],
        );
      },
      {
        checkpoint: { seq: next, carry: final ? '' : read.rest.toString('base64'), state: read.state },
        done: next,
        total: row.chunks,
      },
    );
    return 'more';
  }

  /** Take the planner statistics of `tables` again (outside any transaction; a few hundred ms). */
  private async analyze(tables: string[]): Promise<void> {
    if (tables.length > 0) await this.pool.query(`ANALYZE ${tables.join(', ')}`);
  }

  private check(spec: ImportKindSpec<never>, records: FileRecord[], ctx: ImportContext) {
    const good: { line: number; row: never }[] = [];
    const problems: RowProblem[] = [];
    for (const r of records) {
      if (r.problem || !r.fields) {
        problems.push({ line: r.line, ...(r.problem ?? { column: '(line)', reason: 'unreadable' }) });
        continue;
      }
      const parsed = spec.parse(r.fields, ctx);
      if (Array.isArray(parsed)) problems.push(...parsed.map((p) => ({ line: r.line, ...p })));
      else good.push({ line: r.line, row: parsed });
    }
    return { good, problems };
  }

  private async saveProblems(db: PoolClient, id: string, problems: RowProblem[]): Promise<void> {
    if (problems.length === 0) return;
    await db.query(
      `INSERT INTO ${this.schema}.import_errors (import_id, line, column_name, reason)
       SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[])`,
      [id, problems.map((p) => p.line), problems.map((p) => p.column), problems.map((p) => p.reason)],
    );
  }

  private async finishValidation(step: Parameters<JobHandler<ValidateCheckpoint>>[0], row: ImportRow) {
    const { rows } = await this.pool.query<{ line: string; column_name: string; reason: string }>(
      // By the stored line, a number: ordered by the text the select makes of it, line 10 came before line 9.
      `SELECT e.line::text, e.column_name, e.reason FROM ${this.schema}.import_errors e WHERE e.import_id = $1
        ORDER BY e.line, e.column_name LIMIT $2`,
      [row.id, FILE_ERRORS],
    );
    const errors: JobError[] = rows.slice(0, LISTED_ERRORS).map((e) => ({
      code: 'invalid_line',
      message: `line ${e.line}, ${e.column_name}: ${e.reason}`,
      line: Number(e.line),
      column: e.column_name,
      reason: e.reason,
    }));
    const csv = ['line,column,reason', ...rows.map((e) => [e.line, e.column_name, e.reason].map(csvField).join(','))];
    await step.succeed(
      (db) =>
        db
          .query(
            `UPDATE ${this.schema}.imports SET status = CASE WHEN invalid > 0 THEN 'invalid' ELSE 'validated' END WHERE id = $1`,
            [row.id],
          )
          .then(() => undefined),
      {
        done: row.chunks,
        total: row.chunks,
        errors,
        result: { contentType: 'text/csv', data: Buffer.from(`${csv.join('\n')}\n`) },
      },
    );
    return 'finished' as const;
  }

  private async executeStep(step: Parameters<JobHandler<{ line: number }>>[0]): Promise<'more' | 'finished'> {
    const row = await this.load(idParam(step.params));
    const spec = this.spec(row.kind);
    const ctx = this.contextOf(row);
    const after = step.checkpoint?.line ?? 0;
    const total = Number(row.valid);
    // The staged rows do not change once validated: the step's lines are known before it commits.
    const { rows } = await this.pool.query<{ last: string | null; n: string }>(
      `SELECT max(line)::text AS last, count(*)::text AS n FROM (
         SELECT line FROM ${this.schema}.${spec.staging} WHERE import_id = $1 AND line > $2 ORDER BY line LIMIT $3) b`,
      [row.id, after, spec.mergeBatch ?? MERGE_BATCH],
    );
    const n = Number(rows[0]?.n ?? 0);
    const last = rows[0]?.last === null || rows[0]?.last === undefined ? after : Number(rows[0].last);
    if (n === 0) {
      await this.analyze(spec.writes ?? []);
      await step.succeed(
        async (db) => {
          await db.query(`UPDATE ${this.schema}.imports SET status = 'executed' WHERE id = $1`, [row.id]);
        },
        { done: step.done, total },
      );
      return 'finished';
    }
    await step.commit(
      async (db) => {
        const applied = await spec.merge(db, after, last, ctx);
        await db.query(
          `UPDATE ${this.schema}.imports SET applied = applied + $2, unchanged = unchanged + $3 WHERE id = $1`,
          [row.id, applied, n - applied],
        );
      },
      { checkpoint: { line: last }, done: step.done + n, total },
    );
    return 'more';
  }
}

const STATUSES = ['validating', 'invalid', 'validated', 'executing', 'executed', 'failed'] as const;
function statusOf(status: string): (typeof STATUSES)[number] {
  const known = STATUSES.find((s) => s === status);
  if (!known) throw new Error(`an import in status ${status} is not shown`);
  return known;
}

function idParam(params: unknown): string {
  const id =
    typeof params === 'object' && params !== null
      ? Object.entries(params).find(([k]) => k === 'import_id')?.[1]
      : undefined;
  if (typeof id !== 'string') throw new Error('an import job without import_id');
  return id;
}

function csvField(v: string): string {
  return /[",\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

const CreateInput = z.object({
  kind: z.string(),
  card_id: z.number().int().positive().optional(),
  upload: UploadChunk,
});
const ImportInput = z.object({ import_id: z.string() });
const TenantInput = z.object({ tenant_id: z.number().int().positive() });

const PartInput = z.number().int().min(0);

/** The staff operations of imports are the managers' (the gateway checks the role first). */
function manager<T>(meta: StaffMeta, run: () => Promise<T>): Promise<T> {
  if (meta.staff.role !== 'manager') return Promise.reject(new AppError('insufficient_role'));
  return run();
}

/** The imports operations (routed by kind or import id to the owning service), public, staff and operator. */
export function addImportEndpoints(endpoints: Endpoints, imports: Imports): Endpoints {
  const p = importOperations;
  const a = importAdminOperations;
  const s = staffOperations;
  return endpoints
    .routed(p['imports.create'].operation, Meta, CreateInput, (d, x) => imports.receive(x.meta.tenant_id, d))
    .routed(p['imports.get'].operation, Meta, ImportInput, (d, x) => imports.view(x.meta.tenant_id, d.import_id))
    .routed(p['imports.execute'].operation, Meta, ImportInput, (d, x) => imports.execute(x.meta.tenant_id, d.import_id))
    .routed(s['staff.imports.create'].operation, StaffMeta, CreateInput, (d, x) =>
      manager(x.meta, async () => {
        const received = await imports.receive(x.meta.tenant_id, d);
        return 'id' in received ? imports.staffView(x.meta.tenant_id, received.id) : received;
      }),
    )
    .routed(s['staff.imports.get'].operation, StaffMeta, ImportInput, (d, x) =>
      manager(x.meta, () => imports.staffView(x.meta.tenant_id, d.import_id)),
    )
    .routed(s['staff.imports.execute'].operation, StaffMeta, ImportInput, (d, x) =>
      manager(x.meta, async () => {
        await imports.execute(x.meta.tenant_id, d.import_id);
        return imports.staffView(x.meta.tenant_id, d.import_id);
      }),
    )
    .routed(s['staff.imports.errors'].operation, StaffMeta, ImportInput.extend({ part: PartInput }), (d, x) =>
      manager(x.meta, () => imports.errorFilePart(x.meta.tenant_id, d.import_id, d.part)),
    )
    .routed(a['admin.imports.create'].operation, AdminMeta, CreateInput.extend(TenantInput.shape), (d) =>
      imports.receive(d.tenant_id, d),
    )
    .routed(a['admin.imports.get'].operation, AdminMeta, ImportInput.extend(TenantInput.shape), (d) =>
      imports.view(d.tenant_id, d.import_id),
    )
    .routed(a['admin.imports.execute'].operation, AdminMeta, ImportInput.extend(TenantInput.shape), (d) =>
      imports.execute(d.tenant_id, d.import_id),
    );
}

/** A kind as the import table holds it, whatever its row type (rows travel only from its parse to its own stage). */
export function importKind<Row>(spec: ImportKindSpec<Row>): ImportKindSpec<never> {
  // eslint-disable-next-line @typescript-eslint/consistent-type-assertions -- see above: a kind only ever sees its own rows
  return spec as unknown as ImportKindSpec<never>;
}
