import { AppError, tenantDataInternalOperations, type AdminMeta, type StartTenantDataReply } from '@loyalty/contracts';
import {
  auditActor,
  recordAudit,
  startTenantDataJob,
  withTransaction,
  type Clock,
  type JobStore,
  type Outbox,
  type Pool,
  type PoolClient,
  type ServiceClient,
  type TenantTable,
} from '@loyalty/runtime';
import type { z } from 'zod';

const DAY_MS = 86_400_000;

/** Identity's tables holding a tenant's data, children first (the tenants row itself goes last). */
export const identityTenantTables: TenantTable[] = [
  { table: 'otps', omit: ['code_hash'] },
  { table: 'member_sessions', omit: ['token_hash'] },
  { table: 'staff_sessions', omit: ['token_hash'] },
  { table: 'member_merges', key: 'source_member_id' },
  { table: 'member_erasures', key: 'member_id' },
  { table: 'audit_details', key: 'tenant_id, seq' },
  { table: 'earn_mail_digests', key: 'tenant_id, member_id' },
  { table: 'outgoing_mails' },
  { table: 'audit_anchors', key: 'tenant_id, seq' },
  { table: 'audit_heads', key: 'tenant_id' },
  { table: 'audit_log', key: 'tenant_id, seq' },
  { table: 'members' },
  { table: 'staff_users' },
  { table: 'mail_templates', key: 'tenant_id, kind, locale' },
  { table: 'tenant_mail_settings', key: 'tenant_id', omit: ['smtp_password'] },
  { table: 'tenant_keys', key: 'tenant_id', omit: ['wrapped_key'] },
  { table: 'apps', omit: ['key_hash'] },
  { table: 'tenants', where: 'id = $1' },
];

/** The other services, asked in turn to start their part (identity's own job is started first). */
const OTHERS = [
  tenantDataInternalOperations.ledger,
  tenantDataInternalOperations.claims,
  tenantDataInternalOperations.referrals,
  tenantDataInternalOperations.webhooks,
] as const;

interface LifecycleRow {
  id: number;
  deactivated_at: Date | null;
}

export interface OffboardingDeps {
  pool: Pool;
  clock: Clock;
  outbox: Outbox;
  client: ServiceClient;
  jobs: { store: JobStore; wake(): void };
  retentionDays: number;
  /** Told after a (de)activation committed: every gateway forgets the tenant's app keys. */
  appsChanged: (appIds: string[]) => void;
  /** Told after a (de)activation committed: every gateway forgets the tenant's staff tokens. */
  staffChanged: (tenantId: number, staffIds: number[]) => void;
}

type ServiceJob = { service: string; job: z.output<typeof StartTenantDataReply>['job'] };

/**
 * The operator's offboarding of a tenant: deactivate (apps 403 tenant_inactive, staff refused,
 * webhooks paused through `tenant_deactivated`), reactivate, export and purge (a job per service,
 * started one after the other outside any transaction). Each step is audited in the tenant's
 * chain and recorded in `tenant_lifecycle`, which outlives a purge.
 */
export function tenantOffboarding(deps: OffboardingDeps) {
  const { pool, clock } = deps;
  return {
    deactivate: (d: { tenant_id: number; reason?: string }, meta: AdminMeta) =>
      setActive(deps, d.tenant_id, false, meta, d.reason),
    reactivate: (d: { tenant_id: number }, meta: AdminMeta) => setActive(deps, d.tenant_id, true, meta),

    async export(d: { tenant_id: number }, meta: AdminMeta) {
      await withTransaction(pool, (db) => locked(db, d.tenant_id));
      return { jobs: await startAll(deps, d.tenant_id, 'export', meta) };
    },

    /** Only a tenant inactive for the retention period: 409 tenant_active / tenant_retention_pending. */
    async purge(d: { tenant_id: number }, meta: AdminMeta) {
      const tenant = await withTransaction(pool, (db) => locked(db, d.tenant_id));
      if (!tenant.deactivated_at) throw new AppError('tenant_active');
      const purgeAfter = new Date(tenant.deactivated_at.getTime() + deps.retentionDays * DAY_MS);
      if (purgeAfter.getTime() > clock.now().getTime())
        throw new AppError('tenant_retention_pending', undefined, { purge_after: purgeAfter.toISOString() });
      return { jobs: await startAll(deps, d.tenant_id, 'purge', meta) };
    },
  };
}

function view(deps: OffboardingDeps, t: LifecycleRow) {
  return {
    tenant_id: Number(t.id),
    status: t.deactivated_at ? ('inactive' as const) : ('active' as const),
    deactivated_at: t.deactivated_at?.toISOString() ?? null,
    purge_after: t.deactivated_at
      ? new Date(t.deactivated_at.getTime() + deps.retentionDays * DAY_MS).toISOString()
      : null,
  };
}

async function locked(db: PoolClient, tenantId: number): Promise<LifecycleRow> {
  const { rows } = await db.query<LifecycleRow>(
    'SELECT id, deactivated_at FROM identity.tenants WHERE id = $1 FOR UPDATE',
    [tenantId],
  );
  const tenant = rows[0];
  if (!tenant) throw new AppError('tenant_not_found');
  return tenant;
}

/** The step in the lifecycle record and, but for a purge (which empties it), in the tenant's audit chain. */
async function record(
  deps: OffboardingDeps,
  db: PoolClient,
  meta: AdminMeta,
  tenantId: number,
  action: 'deactivated' | 'reactivated' | 'export_started' | 'purge_started',
  details: Record<string, unknown> = {},
) {
  await db.query(
    'INSERT INTO identity.tenant_lifecycle (tenant_id, action, at, request_id, details) VALUES ($1, $2, $3, $4, $5)',
    [tenantId, action, deps.clock.now(), meta.request_id, JSON.stringify(details)],
  );
  if (action === 'purge_started') return;
  await recordAudit(deps.outbox, db, tenantId, {
    actor: auditActor(meta),
    action: `tenant.${action}`,
    target: { tenant_id: tenantId },
    details,
    request_id: meta.request_id,
  });
}

/** Deactivate or reactivate; a call that changes nothing records nothing. */
async function setActive(deps: OffboardingDeps, tenantId: number, active: boolean, meta: AdminMeta, reason?: string) {
  const outcome = await withTransaction(deps.pool, async (db) => {
    const tenant = await locked(db, tenantId);
    if ((tenant.deactivated_at === null) === active) return { tenant, apps: new Array<string>(), staff: [] };
    const now = deps.clock.now();
    const { rows } = await db.query<LifecycleRow>(
      'UPDATE identity.tenants SET deactivated_at = $2 WHERE id = $1 RETURNING id, deactivated_at',
      [tenantId, active ? null : now],
    );
    await record(deps, db, meta, tenantId, active ? 'reactivated' : 'deactivated', reason ? { reason } : {});
    await deps.outbox.record(db, {
      type: active ? 'tenant_reactivated' : 'tenant_deactivated',
      tenantId,
      occurredAt: now,
      data: { tenant_id: tenantId },
    });
    const apps = await db.query<{ id: string }>('SELECT id FROM identity.apps WHERE tenant_id = $1', [tenantId]);
    const staff = await db.query<{ id: number }>('SELECT id FROM identity.staff_users WHERE tenant_id = $1', [
      tenantId,
    ]);
    return { tenant: rows[0] ?? tenant, apps: apps.rows.map((a) => a.id), staff: staff.rows.map((u) => u.id) };
  });
  deps.appsChanged(outcome.apps);
  deps.staffChanged(tenantId, outcome.staff);
  return { tenant: view(deps, outcome.tenant) };
}

/** Start every service's job of `kind`: identity's first, then each other's, outside any transaction. */
async function startAll(
  deps: OffboardingDeps,
  tenantId: number,
  kind: 'export' | 'purge',
  meta: AdminMeta,
): Promise<ServiceJob[]> {
  const jobs: ServiceJob[] = [{ service: 'identity', job: await startTenantDataJob(deps, tenantId, kind) }];
  for (const op of OTHERS) {
    const answer = await deps.client.call(op, { request_id: meta.request_id, tenant_id: tenantId }, { kind });
    jobs.push({ service: op.service, job: answer.job });
  }
  await withTransaction(deps.pool, (db) =>
    record(deps, db, meta, tenantId, kind === 'export' ? 'export_started' : 'purge_started', {
      jobs: jobs.map((j) => j.job.id),
    }),
  );
  return jobs;
}
