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

/**
 * An audit chain anchor: the tenant's chain head (`seq`, `hash`) at `anchored_at`, signed by identity
 * with the platform's audit key (`signature`: HMAC-SHA256, key named by `key_id`). Identity writes
 * one whenever a head moved since the last, logs it and publishes it as `audit_anchored`
 * (`<root>.events.identity.audit_anchored`, webhook type `audit.anchored`). `token` is the same in
 * one string: kept outside the platform, it is given back to the verification (`anchor`), which
 * then tells a chain rebuilt since from the real one.
 */
export const AUDIT_ANCHORED_EVENT = 'audit_anchored';

export const AUDIT_ANCHOR_TOKEN = /^v1\.\d{1,15}\.\d{1,15}\.[0-9a-f]{64}\.\d{1,15}\.[0-9a-f]{16}\.[0-9a-f]{64}$/;

export const AuditAnchor = z
  .object({
    seq: z.number().int().describe("the chain head's sequence number"),
    hash: z.string().describe("the chain head's hash"),
    anchored_at: z.string().describe('when identity signed it (ISO 8601)'),
    key_id: z.string().describe('which audit key signed it (a fingerprint, not the key)'),
    signature: z.string().describe('HMAC-SHA256 (hex) under a key derived from the audit key'),
    token: z.string().describe('the anchor in one string: keep it, and give it back to the verification (`anchor`)'),
  })
  .meta({ id: 'AuditAnchor' });
export type AuditAnchor = z.infer<typeof AuditAnchor>;
