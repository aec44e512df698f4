import { AppError, ServiceMeta, StartTenantDataRequest, StartTenantDataReply } from '@loyalty/contracts';
import type { Clock } from './clock.ts';
import { withTransaction, type Pool, type PoolClient, type Queryable } from './db.ts';
import type { Endpoints } from './endpoints.ts';
import { jobView } from './job-endpoints.ts';
import { RESULT_PART_BYTES, type JobHandler, type JobStore } from './jobs.ts';

/**
 * A tenant's data in one service's schema, for the operator's export and purge of a tenant. A
 * service lists its tables (`tenantData` in its declaration) children first: the purge deletes in
 * that order, so foreign keys never stand in the way.
 */
export interface TenantTable {
  /** The table, in the service's schema. */
  table: string;
  /** The tenant's rows, `$1` the tenant id (default `tenant_id = $1`); a child table names its parent's rows. */
  where?: string;
  /** Columns ordering the export, a unique key (default `id`). */
  key?: string;
  /** Columns left out of the export (secrets' hashes). */
  omit?: string[];
}

export const TENANT_EXPORT_JOB = 'tenant.export';
export const TENANT_PURGE_JOB = 'tenant.purge';

const EXPORT_ROWS = 500;
const PURGE_ROWS = 5_000;

interface ExportCheckpoint {
  table: number;
  offset: number;
  /** Bytes of the result stored so far (every part but the last is full: the download reads them so). */
  size: number;
}

interface PurgeCheckpoint {
  table: number;
  deleted: Record<string, number>;
}

const whereOf = (t: TenantTable) => t.where ?? 'tenant_id = $1';

/**
 * The export: one step per batch of rows of a table, written as JSON Lines (`{"entity": "<schema>.<table>",
 * "row": {...}}` per line) and stored as result parts with the step's checkpoint, so the result is
 * never held whole and a resumed job goes on from the last batch stored.
 */
export function tenantExportJob(schema: string, tables: TenantTable[]): JobHandler<ExportCheckpoint> {
  return async (step) => {
    const c = step.checkpoint ?? { table: 0, offset: 0, size: 0 };
    const t = tables[c.table];
    if (!t) {
      // An empty export still has its (empty) first part to download.
      const empty = async (db: PoolClient) => {
        if (c.size === 0) await step.appendResult(db, 0, Buffer.alloc(0));
      };
      await step.succeed(empty, {
        done: step.done,
        total: tables.length,
        result: { contentType: 'application/x-ndjson', stored: true, size: c.size },
      });
      return 'finished';
    }
    let next = c;
    await step.commit(
      async (db) => {
        const rows = await exportBatch(db, schema, t, step.tenantId, c.offset);
        const text = rows.map((row) => `${JSON.stringify({ entity: `${schema}.${t.table}`, row })}\n`).join('');
        let rest = Buffer.from(text);
        let size = c.size;
        // The last part is filled up to RESULT_PART_BYTES before the next one starts.
        while (rest.length > 0) {
          const chunk = rest.subarray(0, RESULT_PART_BYTES - (size % RESULT_PART_BYTES));
          await step.appendResult(db, Math.floor(size / RESULT_PART_BYTES), chunk);
          size += chunk.length;
          rest = rest.subarray(chunk.length);
        }
        const more = rows.length === EXPORT_ROWS;
        next = { table: more ? c.table : c.table + 1, offset: more ? c.offset + rows.length : 0, size };
      },
      // Read after the effects ran (they decide it).
      {
        get checkpoint() {
          return next;
        },
        done: step.done + 1,
        total: tables.length,
      },
    );
    return 'more';
  };
}

async function exportBatch(db: Queryable, schema: string, t: TenantTable, tenantId: number, offset: number) {
  const { rows } = await db.query<{ row: unknown }>(
    `SELECT to_jsonb(x) - $2::text[] AS row FROM ${schema}.${t.table} x
      WHERE ${whereOf(t)} ORDER BY ${t.key ?? 'id'} LIMIT ${EXPORT_ROWS} OFFSET $3`,
    [tenantId, t.omit ?? [], offset],
  );
  return rows.map((r) => r.row);
}

/**
 * The purge: the tenant's rows of each table deleted in batches, children first, each batch a
 * step committed with its checkpoint; then what the shared tables hold of the tenant (stored
 * idempotent answers, events not yet relayed, its other jobs and their results). The result
 * counts what was deleted per table. A repeated purge finds nothing more.
 */
export function tenantPurgeJob(schema: string, tables: TenantTable[]): JobHandler<PurgeCheckpoint> {
  const shared: TenantTable[] = [
    { table: 'idempotency_keys' },
    { table: 'outbox', where: "(payload ->> 'tenant_id')::bigint = $1" },
  ];
  const all = [...tables, ...shared];
  return async (step) => {
    const c = step.checkpoint ?? { table: 0, deleted: {} };
    const t = all[c.table];
    if (!t) {
      const deleted = c.deleted;
      await step.succeed(
        async (db) => {
          const jobs = await db.query(`DELETE FROM ${schema}.jobs WHERE tenant_id = $1 AND id <> $2::uuid`, [
            step.tenantId,
            step.id.slice(step.id.lastIndexOf('_') + 1),
          ]);
          deleted.jobs = jobs.rowCount ?? 0;
        },
        {
          done: step.done,
          total: all.length,
          result: { contentType: 'application/json', data: Buffer.from(JSON.stringify({ schema, deleted })) },
        },
      );
      return 'finished';
    }
    let gone = 0;
    await step.commit(
      async (db) => {
        // Append-only tables (the audit log) let the purge of this tenant, and only it, delete.
        await db.query(`SELECT set_config('loyalty.purge_tenant', $1::text, true)`, [step.tenantId]);
        const { rowCount } = await db.query(
          `DELETE FROM ${schema}.${t.table} WHERE ctid IN (
             SELECT ctid FROM ${schema}.${t.table} WHERE ${whereOf(t)} LIMIT ${PURGE_ROWS})`,
          [step.tenantId],
        );
        gone = rowCount ?? 0;
      },
      {
        get checkpoint() {
          return {
            table: gone === PURGE_ROWS ? c.table : c.table + 1,
            deleted: { ...c.deleted, [t.table]: (c.deleted[t.table] ?? 0) + gone },
          };
        },
        done: step.done + 1,
        total: all.length,
      },
    );
    return 'more';
  };
}

/**
 * `internal.tenant_data.start` of a service: queue its export or purge of the meta's tenant and
 * answer the job as the operator sees it (/admin/v1/jobs/{id}).
 */
export function addTenantDataEndpoint(
  endpoints: Endpoints,
  rt: { pool: Pool; clock: Clock; jobs: { store: JobStore; wake(): void } },
): void {
  endpoints.routed('internal.tenant_data.start', ServiceMeta, StartTenantDataRequest, async (d, { meta }) =>
    StartTenantDataReply.parse({ job: await startTenantDataJob(rt, meta.tenant_id, d.kind) }),
  );
}

/** Queue this service's export or purge of a tenant; the job as the operator sees it. */
export async function startTenantDataJob(
  rt: { pool: Pool; clock: Clock; jobs: { store: JobStore; wake(): void } },
  tenantId: number,
  kind: 'export' | 'purge',
) {
  const now = rt.clock.now();
  const id = await withTransaction(rt.pool, (db) =>
    rt.jobs.store.create(db, {
      tenantId,
      kind: kind === 'export' ? TENANT_EXPORT_JOB : TENANT_PURGE_JOB,
      now,
    }),
  );
  rt.jobs.wake();
  const job = await rt.jobs.store.find(tenantId, id);
  if (!job) throw new AppError('job_not_found');
  return jobView(rt.jobs.store, job, '/admin/v1', rt.clock.now());
}
