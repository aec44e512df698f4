import { z } from 'zod';
import { Id, IdParam, Text, Timestamp } from '../common.ts';
import { Job } from './jobs.ts';
import { defineInternalOperations, defineOperations } from './types.ts';

/**
 * Offboarding a tenant (operator API under /admin/v1, `npm run admin`): deactivate it (its apps
 * are refused with 403 tenant_inactive, its webhooks pause, its staff cannot use the console),
 * reactivate it, export everything it has in every service (a job per service whose result is
 * JSON Lines, one line per row naming its entity, stored in parts as it is read), and purge it once
 * it has been inactive for the retention period (a job per service hard-deleting its rows).
 */
const base = {
  service: 'identity',
  scope: null,
  memberToken: false,
  idempotent: false,
  tag: 'Tenant offboarding (operator)',
} as const;
const TenantParams = z.object({ tenant_id: IdParam });

export const TenantLifecycle = z
  .object({
    tenant_id: Id,
    status: z.enum(['active', 'inactive']),
    deactivated_at: Timestamp.nullable(),
    purge_after: Timestamp.nullable().describe('when a purge is allowed: deactivated_at + the retention period'),
  })
  .meta({ id: 'TenantLifecycle' });

const ServiceJob = z
  .object({ service: z.string(), job: Job })
  .meta({ id: 'TenantDataJob', description: 'one service’s job: follow it at /admin/v1/jobs/{id}' });

export const tenantOffboardingOperations = defineOperations({
  'admin.tenant.deactivate': {
    ...base,
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/deactivate',
    operation: 'admin.tenant.deactivate',
    summary:
      'Deactivate a tenant: its apps answer 403 tenant_inactive, its staff cannot sign in or use the console, its webhooks pause; nothing is deleted (a repeated call changes nothing)',
    params: TenantParams,
    body: z.object({ reason: Text.trim().max(500).optional() }),
    response: z.object({ tenant: TenantLifecycle }),
    errors: ['invalid_operator_token', 'tenant_not_found'],
  },
  'admin.tenant.reactivate': {
    ...base,
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/reactivate',
    operation: 'admin.tenant.reactivate',
    summary: 'Reactivate a deactivated tenant: apps, staff and webhooks work again (deliveries held meanwhile go out)',
    params: TenantParams,
    response: z.object({ tenant: TenantLifecycle }),
    errors: ['invalid_operator_token', 'tenant_not_found'],
  },
  'admin.tenant.export': {
    ...base,
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/export',
    operation: 'admin.tenant.export',
    summary:
      "Export everything a tenant has, one job per service; each job's result is JSON Lines ({entity, row} per line, secrets' hashes left out), downloaded at /admin/v1/jobs/{id}/result for 7 days",
    params: TenantParams,
    response: z.object({ jobs: z.array(ServiceJob) }),
    errors: ['invalid_operator_token', 'tenant_not_found'],
  },
  'admin.tenant.purge': {
    ...base,
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/purge',
    operation: 'admin.tenant.purge',
    summary:
      'Hard-delete a tenant in every schema, one job per service: only a tenant deactivated at least the retention period ago (409 otherwise); the lifecycle record stays',
    params: TenantParams,
    response: z.object({ jobs: z.array(ServiceJob) }),
    errors: ['invalid_operator_token', 'tenant_not_found', 'tenant_active', 'tenant_retention_pending'],
  },
});

export const TenantDataKind = z.enum(['export', 'purge']);
export const StartTenantDataRequest = z.object({ kind: TenantDataKind });
export const StartTenantDataReply = z.object({ job: Job });

const startOf = <S extends 'ledger' | 'claims' | 'referrals' | 'webhooks'>(service: S) =>
  ({
    service,
    operation: 'internal.tenant_data.start',
    request: StartTenantDataRequest,
    reply: StartTenantDataReply,
  }) as const;

/** Each service's export or purge of a tenant, started as a job of its own (identity asks them in turn). */
export const tenantDataInternalOperations = defineInternalOperations({
  ledger: startOf('ledger'),
  claims: startOf('claims'),
  referrals: startOf('referrals'),
  webhooks: startOf('webhooks'),
});

const at = '2026-03-14T09:26:53.000Z';
const job = (service: string, kind: string) => ({
  service,
  job: {
    id: `job_${service}_7b0f3c52-1d7e-4a55-9a0e-3f6c2d1b8e41`,
    kind,
    status: 'queued',
    progress: { done: 0, total: null },
    errors: [],
    created_at: at,
    finished_at: null,
  },
});

export const tenantOffboardingExamples = {
  'admin.tenant.deactivate': {
    request: { reason: 'contract ended' },
    response: {
      tenant: { tenant_id: 3, status: 'inactive', deactivated_at: at, purge_after: '2026-04-13T09:26:53.000Z' },
    },
  },
  'admin.tenant.reactivate': {
    response: { tenant: { tenant_id: 3, status: 'active', deactivated_at: null, purge_after: null } },
  },
  'admin.tenant.export': {
    response: { jobs: ['identity', 'ledger', 'claims', 'referrals', 'webhooks'].map((s) => job(s, 'tenant.export')) },
  },
  'admin.tenant.purge': {
    response: { jobs: ['identity', 'ledger', 'claims', 'referrals', 'webhooks'].map((s) => job(s, 'tenant.purge')) },
  },
};
