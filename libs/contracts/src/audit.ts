import * as z from 'zod';
import { Text } from './common.ts';

/**
 * The audit log: every staff, app and operator action that changes something is described by an
 * `audit_recorded` event, written by the service that made the change through its transactional
 * outbox in the same transaction as the change (`<root>.events.<service>.audit_recorded`).
 * Identity consumes them and appends each to its tenant's hash chain (services/identity/src/audit/).
 */
export const AUDIT_EVENT = 'audit_recorded';

export const staffRoles = ['staff', 'manager'] as const;
export const StaffRole = z.enum(staffRoles);
export type StaffRole = z.infer<typeof StaffRole>;

/** Who did it: a staff user (console / staff API), an app (merchant API) or the operator (admin API). */
export const AuditActor = z.discriminatedUnion('type', [
  z.object({ type: z.literal('staff'), id: z.number().int().positive(), email: Text.max(254), role: StaffRole }),
  z.object({ type: z.literal('app'), id: Text.min(1).max(64) }),
  z.object({ type: z.literal('operator') }),
]);
export type AuditActor = z.infer<typeof AuditActor>;

/** Ids of what was acted on, e.g. `{claim_request_id: 17, member_id: 42, card_id: 2}`. */
const Targets = z.record(Text.max(64), z.union([z.number(), Text.max(255)]));

/** What one audit event says (the `data` of `audit_recorded`). */
export const AuditEntry = z.object({
  actor: AuditActor,
  /** `<thing>.<verb>`, e.g. `claim.approved`, `balance.adjusted`, `app.key_rotated`. */
  action: Text.min(1).max(64),
  target: Targets,
  /** Signed amounts involved: points as integers, money in currency units with two decimals. */
  amounts: z.record(Text.max(64), z.number()).default({}),
  /** Free text the actor gave (a staff note, an adjustment's reason) and settings changed. */
  details: z.record(Text.max(64), z.unknown()).default({}),
  request_id: Text.min(1).max(128),
});
export type AuditEntry = z.input<typeof AuditEntry>;
