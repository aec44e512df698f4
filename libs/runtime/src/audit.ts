import {
  AUDIT_EVENT,
  AuditEntry,
  type AdminMeta,
  type AuditActor,
  type Meta,
  type StaffMeta,
} from '@loyalty/contracts';
import type { Queryable } from './db.ts';
import type { Outbox } from './outbox.ts';

/**
 * Who a request's meta says acts: the staff user of a staff API call, the app of a merchant API
 * call, the operator of an admin API call.
 */
export function auditActor(meta: StaffMeta | Meta | AdminMeta): AuditActor {
  if ('staff' in meta) return { type: 'staff', id: meta.staff.id, email: meta.staff.email, role: meta.staff.role };
  if ('app_id' in meta) return { type: 'app', id: meta.app_id };
  return { type: 'operator' };
}

/**
 * Write an audit event (`<root>.events.<service>.audit_recorded`) with `db`, the transaction of the
 * change it describes: it exists if and only if the change commits. Identity appends it to the
 * tenant's hash chain. The entry is checked against the contract before it is written.
 */
export function recordAudit(
  outbox: Outbox,
  db: Queryable,
  tenantId: number,
  entry: AuditEntry,
  occurredAt?: Date,
): Promise<string> {
  return outbox.record(db, { type: AUDIT_EVENT, tenantId, data: AuditEntry.parse(entry), occurredAt });
}
