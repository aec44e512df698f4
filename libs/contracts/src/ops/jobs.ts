import * as z from 'zod';
import { Id, Text, Timestamp } from '../common.ts';
import { AppError } from '../errors.ts';
import type { Scope } from '../messages.ts';
import { services, type ServiceName } from '../subjects.ts';
import { defineOperations } from './types.ts';

/**
 * The jobs resource. Long work (exports, erasures, imports, recomputations) runs as a job in the
 * service whose data it changes; a job's id names that service (`job_<service>_<uuid>`), so the
 * gateway forwards `GET /api/v1/jobs/:job_id` to its owner without asking anyone.
 */
const JOB_ID = new RegExp(`^job_(${services.join('|')})_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`);

export const JobId = Text.max(100).describe('`job_<service>_<uuid>`: the service that runs the job');

/** The service that owns a job id; a malformed id, or one naming no service, is a job that does not exist. */
export function jobOwner(params: unknown): ServiceName {
  const id = typeof params === 'object' && params !== null && 'job_id' in params ? params.job_id : undefined;
  const owner = typeof id === 'string' ? JOB_ID.exec(id)?.[1] : undefined;
  const service = services.find((s) => s === owner);
  if (!service) throw new AppError('job_not_found');
  return service;
}

/**
 * The scope an app needs to download the result of a job of `kind`: the scope of the operation that
 * starts such jobs. A result is what the job read out (a member's personal data, a programme's
 * rows, an import's bad lines), so it is not for every app of the tenant, as the job's status is: a
 * read-only app that learns a job id cannot take the file. `member.*` jobs (a member's export,
 * erasure, merge) are started with members_manage; every other kind (exports, imports, tier
 * recomputations, and the operator's own jobs of the tenant) with programme_manage or by the
 * operator, whose data is the programme's.
 */
export function jobResultScope(kind: string): Scope {
  return kind.startsWith('member.') ? 'members_manage' : 'programme_manage';
}

export const JobStatus = z.enum(['queued', 'running', 'succeeded', 'failed']);

export const JobErrorRecord = z
  .looseObject({ code: z.string(), message: z.string() })
  .describe('what went wrong (a line of an import, a service that could not do its part), with details');

export const Job = z
  .object({
    id: JobId,
    kind: z.string(),
    status: JobStatus,
    progress: z.object({
      done: z.number().int(),
      total: z.number().int().nullable().describe('null until the job knows it'),
    }),
    result_url: z
      .string()
      .optional()
      .describe('where the result is downloaded (a path of this API), once the job succeeded with one, for 7 days'),
    errors: z.array(JobErrorRecord),
    created_at: Timestamp,
    finished_at: Timestamp.nullable(),
  })
  .meta({ id: 'Job' });

const JobParams = z.object({ job_id: JobId });
const jobFields = {
  route: jobOwner,
  service: 'identity',
  scope: null,
  memberToken: false,
  idempotent: false,
  params: JobParams,
} as const;

export const jobOperations = defineOperations({
  'jobs.get': {
    ...jobFields,
    method: 'GET',
    path: '/api/v1/jobs/:job_id',
    operation: 'jobs.get',
    tag: 'Jobs',
    summary: 'A job of this tenant: its status, progress, errors and where its result is',
    response: Job,
    errors: ['job_not_found'],
  },
  'jobs.result': {
    ...jobFields,
    method: 'GET',
    path: '/api/v1/jobs/:job_id/result',
    operation: 'jobs.result',
    tag: 'Jobs',
    download: true,
    summary:
      "Download a succeeded job's result (streamed, with its content type); kept 7 days. Needs the scope that started the job: members_manage for a member's (member.*), programme_manage for any other (exports, imports)",
    response: z.string(),
    errors: ['job_not_found', 'insufficient_scope', 'job_result_not_found'],
  },
});

export const jobAdminOperations = defineOperations({
  'admin.jobs.get': {
    ...jobFields,
    method: 'GET',
    path: '/admin/v1/jobs/:job_id',
    operation: 'jobs.admin.get',
    tag: 'Jobs (operator)',
    summary: "Any tenant's job",
    response: z.object({ ...Job.shape, tenant_id: Id }),
    errors: ['job_not_found'],
  },
  'admin.jobs.result': {
    ...jobFields,
    method: 'GET',
    path: '/admin/v1/jobs/:job_id/result',
    operation: 'jobs.admin.result',
    tag: 'Jobs (operator)',
    download: true,
    summary: "Download any tenant's job result",
    response: z.string(),
    errors: ['job_not_found', 'job_result_not_found'],
  },
});

/**
 * One part of a result over NATS (a part is at most 512 KB, base64 in the reply); the gateway
 * asks for part 0, 1, ... and streams each to the client until `last`.
 */
export const JobResultPartRequest = z.object({ job_id: JobId, part: z.number().int().min(0) });
export const JobResultPart = z.object({
  content_type: z.string(),
  size: z.number().int().describe('of the whole result, in bytes'),
  data: z.string().describe('base64'),
  last: z.boolean(),
});
