import type { AdminMeta, OperationInput } from '@loyalty/contracts';
import { AppError, reportAdminOperations, reportOperations, staffOperations } from '@loyalty/contracts';
import {
  auditActor,
  jobView,
  recordAudit,
  withTransaction,
  type Endpoints,
  type ServiceRuntime,
} from '@loyalty/runtime';
import { programmeReport } from './report.ts';
import { rebuildJob, reportFolder } from './rollups.ts';

export type Reports = ReturnType<typeof reportsOf>;

/** Programme reports: the fold of the rollups (a task), the rebuild (a job) and the report itself. */
export function reportsOf(rt: ServiceRuntime, tenantMustExist: (tenantId: number, requestId: string) => Promise<void>) {
  return {
    folder: reportFolder(rt.pool, rt.log, 1000),
    jobs: { 'reports.rebuild': rebuildJob(rt.pool) },
    report: (tenantId: number, input: OperationInput<(typeof reportOperations)['cards.report']>) =>
      programmeReport(rt.pool, rt.clock, tenantId, input),
    rebuild: async (tenantId: number, cardId: number | undefined, meta: AdminMeta) => {
      // The operator names the tenant: a mistyped id queued a job that succeeded doing nothing.
      await tenantMustExist(tenantId, meta.request_id);
      return rebuildReports(rt, tenantId, cardId, meta);
    },
  };
}

/** The report operations of the ledger's table (the merchant API's, the console's, the operator's rebuild). */
export function reportEndpoints(endpoints: Endpoints, reports: Reports): Endpoints {
  return endpoints
    .public(reportOperations['cards.report'], (d, x) => reports.report(x.meta.tenant_id, d))
    .staff(staffOperations['staff.cards.report'], (d, x) => reports.report(x.meta.tenant_id, d))
    .operator(reportAdminOperations['admin.reports.rebuild'], (d, x) =>
      reports.rebuild(d.tenant_id, d.card_id, x.meta),
    );
}

/** Queue a rebuild of a tenant's report rollups (one card, or all), as a job of the jobs resource. */
async function rebuildReports(rt: ServiceRuntime, tenantId: number, cardId: number | undefined, meta: AdminMeta) {
  const { pool, clock, jobs } = rt;
  const jobId = await withTransaction(pool, async (db) => {
    if (cardId !== undefined) {
      const { rowCount } = await db.query('SELECT 1 FROM ledger.cards WHERE tenant_id = $1 AND id = $2', [
        tenantId,
        cardId,
      ]);
      if (rowCount !== 1) throw new AppError('card_not_found');
    }
    await recordAudit(rt.outbox, db, tenantId, {
      actor: auditActor(meta),
      action: 'reports.rebuild',
      target: cardId === undefined ? {} : { card_id: cardId },
      request_id: meta.request_id,
    });
    const id = await jobs.store.create(db, {
      tenantId,
      kind: 'reports.rebuild',
      params: cardId === undefined ? {} : { card_id: cardId },
      now: clock.now(),
    });
    return id;
  });
  jobs.wake();
  const job = await jobs.store.find(tenantId, jobId);
  if (!job) throw new AppError('job_not_found');
  return { job: jobView(jobs.store, job, '/admin/v1', clock.now()) };
}
