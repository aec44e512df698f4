import { z } from 'zod';
import {
  AdminMeta,
  AppError,
  jobAdminOperations,
  jobOperations,
  jobResultScope,
  JobResultPartRequest,
  Meta,
  type Job,
} from '@loyalty/contracts';
import type { Clock } from './clock.ts';
import type { Endpoints } from './endpoints.ts';
import { RESULT_PART_BYTES, type JobRecord, type JobStore } from './jobs.ts';

type JobAnswer = z.output<typeof Job>;
const JobParams = z.object({ job_id: z.string() });

/** A job as the jobs resource shows it; `base` is the API its result is downloaded from. */
export function jobView(store: JobStore, job: JobRecord, base: '/api/v1' | '/admin/v1', now: Date): JobAnswer {
  const id = store.publicId(job.id);
  const downloadable = job.status === 'succeeded' && job.result_type !== null && (job.expires_at ?? now) > now;
  return {
    id,
    kind: job.kind,
    status: job.status,
    progress: { done: Number(job.done), total: job.total === null ? null : Number(job.total) },
    ...(downloadable ? { result_url: `${base}/jobs/${id}/result` } : {}),
    errors: job.errors,
    created_at: job.created_at.toISOString(),
    finished_at: job.finished_at ? job.finished_at.toISOString() : null,
  };
}

/** The job, or `job_not_found` (another tenant's job is not found either). */
async function foundJob(store: JobStore, tenantId: number | undefined, jobId: string): Promise<JobRecord> {
  const job = await store.find(tenantId, jobId);
  if (!job) throw new AppError('job_not_found');
  return job;
}

/**
 * One part of a job's result, for the gateway to stream (`last` ends the download). An app's
 * request (`scopes`) needs the scope that started the job (jobResultScope); the operator's does not.
 */
export async function resultPart(
  store: JobStore,
  tenantId: number | undefined,
  input: { job_id: string; part: number },
  now: Date,
  scopes?: readonly string[],
) {
  const job = await foundJob(store, tenantId, input.job_id);
  const needed = jobResultScope(job.kind);
  if (scopes && !scopes.includes(needed))
    throw new AppError('insufficient_scope', `Downloading this job's result needs the ${needed} scope.`, {
      required_scope: needed,
    });
  const data = job.status === 'succeeded' ? await store.resultPart(tenantId, input.job_id, input.part, now) : undefined;
  if (!data || job.result_type === null || job.result_size === null) throw new AppError('job_result_not_found');
  const size = Number(job.result_size);
  return {
    content_type: job.result_type,
    size,
    data: data.toString('base64'),
    last: (input.part + 1) * RESULT_PART_BYTES >= size,
  };
}

/**
 * The jobs resource's subjects, served by every service (each answers for the jobs in its own
 * schema; the gateway picks the service from the job id): a tenant's view and the operator's.
 */
export function addJobEndpoints(endpoints: Endpoints, store: JobStore, clock: Clock): void {
  endpoints
    .routed(jobOperations['jobs.get'].operation, Meta, JobParams, async ({ job_id }, { meta }) =>
      jobView(store, await foundJob(store, meta.tenant_id, job_id), '/api/v1', clock.now()),
    )
    .routed(jobOperations['jobs.result'].operation, Meta, JobResultPartRequest, async (input, { meta }) =>
      resultPart(store, meta.tenant_id, input, clock.now(), meta.scopes),
    )
    .routed(jobAdminOperations['admin.jobs.get'].operation, AdminMeta, JobParams, async ({ job_id }) => {
      const job = await foundJob(store, undefined, job_id);
      return { ...jobView(store, job, '/admin/v1', clock.now()), tenant_id: Number(job.tenant_id) };
    })
    .routed(jobAdminOperations['admin.jobs.result'].operation, AdminMeta, JobResultPartRequest, async (input) =>
      resultPart(store, undefined, input, clock.now()),
    );
}
