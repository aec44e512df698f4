import {
  AppError,
  type AdminMeta,
  type StaffCredentialsChanged,
  type StaffMeta,
  type StaffRole,
} from '@loyalty/contracts';
import { auditActor, recordAudit, type Clock, type Outbox, type Pool, type ReplayStore } from '@loyalty/runtime';
import {
  findStaff,
  insertStaff,
  listStaff,
  lockActiveManagers,
  revokeStaffSessions,
  updateStaff,
  type StaffUser,
} from '../store/staff.ts';
import { findTenant } from '../store/tenants.ts';

export interface StaffTeamDeps {
  pool: Pool;
  clock: Clock;
  outbox: Outbox;
  replays: ReplayStore;
  /** Told after a staff user's change committed: every gateway replica forgets what it cached of them. */
  staffChanged?: (change: StaffCredentialsChanged) => void;
}

/** A name for a staff user created by email only: the email's local part. */
const nameOf = (email: string) => email.split('@')[0] ?? email;

/**
 * The tenant's staff users: managers add, change and deactivate them (the operator creates the
 * first manager). Every change is audited in its own transaction; a tenant always keeps an active
 * manager, and a deactivated user's sessions end at once (a changed user is broadcast after the
 * commit, so no gateway replica goes on trusting their old role or sessions).
 */
export function staffTeam(deps: StaffTeamDeps) {
  return {
    list: async (meta: StaffMeta) => ({ staff: await listStaff(deps.pool, meta.tenant_id) }),

    invite: (d: { email: string; name: string; role: StaffRole }, meta: StaffMeta) =>
      create(deps, meta.tenant_id, d, meta, meta.idempotency_key, 'staff.team.invite'),

    async update(d: { staff_id: number; name?: string; role?: StaffRole; active?: boolean }, meta: StaffMeta) {
      const answer = await deps.replays.run(
        { tenantId: meta.tenant_id, key: meta.idempotency_key, operation: 'staff.team.update', data: d },
        async (db) => {
          // Managers first, then the user: every change of a manager takes the same locks in the same order.
          const managers = await lockActiveManagers(db, meta.tenant_id);
          const before = await findStaff(db, meta.tenant_id, { id: d.staff_id }, true);
          if (!before) throw new AppError('staff_not_found');
          const after = { name: d.name ?? before.name, role: d.role ?? before.role, active: d.active ?? before.active };
          const losesManager =
            before.role === 'manager' && before.active && (after.role !== 'manager' || !after.active);
          if (losesManager && managers.length <= 1) throw new AppError('last_manager');
          const staff = await updateStaff(db, before.id, after);
          if (before.active && !after.active) await revokeStaffSessions(db, before.id, deps.clock.now());
          await recordAudit(deps.outbox, db, meta.tenant_id, {
            actor: auditActor(meta),
            action: before.active && !after.active ? 'staff.deactivated' : 'staff.updated',
            target: { staff_id: staff.id },
            details: { email: staff.email, changes: changes(before, staff) },
            request_id: meta.request_id,
          });
          return { staff };
        },
      );
      // Committed (or replayed: telling again is harmless), and before the answer reaches the gateway.
      deps.staffChanged?.({ tenant_id: meta.tenant_id, staff_id: answer.staff.id });
      return answer;
    },

    /** Operator: a staff user (the tenant's first manager) for a tenant named in the path. */
    async adminCreate(d: { tenant_id: number; email: string; name?: string; role: StaffRole }, meta: AdminMeta) {
      if (!(await findTenant(deps.pool, d.tenant_id))) throw new AppError('tenant_not_found');
      const { tenant_id: tenantId, ...rest } = d;
      return create(deps, tenantId, rest, meta, undefined, 'admin.staff.create');
    },

    async adminList(d: { tenant_id: number }) {
      if (!(await findTenant(deps.pool, d.tenant_id))) throw new AppError('tenant_not_found');
      return { staff: await listStaff(deps.pool, d.tenant_id) };
    },
  };
}

/** A staff user created and audited in one transaction, under the caller's idempotency key. */
async function create(
  deps: StaffTeamDeps,
  tenantId: number,
  d: { email: string; name?: string; role: StaffRole },
  meta: StaffMeta | AdminMeta,
  key: string | undefined,
  operation: string,
) {
  return deps.replays.run({ tenantId, key, operation, data: d }, async (db) => {
    const staff = await insertStaff(db, {
      tenantId,
      email: d.email,
      name: d.name ?? nameOf(d.email),
      role: d.role,
      now: deps.clock.now(),
    });
    await recordAudit(deps.outbox, db, tenantId, {
      actor: auditActor(meta),
      action: 'staff.created',
      target: { staff_id: staff.id },
      details: { email: staff.email, role: staff.role },
      request_id: meta.request_id,
    });
    return { staff };
  });
}

function changes(before: StaffUser, after: StaffUser): Record<string, { from: unknown; to: unknown }> {
  const out: Record<string, { from: unknown; to: unknown }> = {};
  for (const key of ['name', 'role', 'active'] as const)
    if (before[key] !== after[key]) out[key] = { from: before[key], to: after[key] };
  return out;
}
