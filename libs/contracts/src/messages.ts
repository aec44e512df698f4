import { z } from 'zod';
import { StaffRole } from './audit.ts';
import { Text } from './common.ts';
import type { ErrorBody } from './errors.ts';

export const scopes = [
  'points_read',
  'points_write',
  'cashback_read',
  'cashback_write',
  'card_read',
  'webhooks_manage',
  /** Earning rules of the tenant's cards (GET/POST/PATCH/DELETE /api/v1/loyalty/cards/{card_id}/rules). */
  'programme_manage',
  /** Members' personal data: export, erasure and consents (POST /api/v1/members/{member_id}/erase, ...). */
  'members_manage',
] as const;
export const Scope = z.enum(scopes);
export type Scope = z.infer<typeof Scope>;

const RequestId = Text.min(1).max(128);
const TenantId = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

/**
 * Who is calling: filled in by the gateway after authentication, carried on every request message.
 * Services validate it like any other input; security facts (is the tenant a sandbox, does it
 * exist) come from the owning service's own records, never from these fields alone.
 */
export const Meta = z.object({
  request_id: RequestId,
  tenant_id: TenantId,
  app_id: Text.min(1).max(64),
  sandbox: z.boolean(),
  scopes: z.array(Scope),
  member_id: z.number().int().positive().optional(),
  /** The member session behind the presented member token (refresh and logout act on it). */
  session_id: z.number().int().positive().optional(),
  idempotency_key: Text.min(1).max(255).optional(),
});
export type Meta = z.infer<typeof Meta>;

/**
 * Meta of a request from another service (an internal operation): the request id, the tenant it
 * acts for and, for saga steps, a deterministic idempotency key. Other fields are dropped.
 */
export const ServiceMeta = z.object({
  request_id: RequestId,
  tenant_id: TenantId,
  idempotency_key: Text.min(1).max(300).optional(),
});
export type ServiceMeta = z.infer<typeof ServiceMeta>;

/** Meta of an operator (admin API) request: authenticated by the operator token, no tenant. */
export const AdminMeta = z.object({ request_id: RequestId, operator: z.literal(true) });
export type AdminMeta = z.infer<typeof AdminMeta>;

/** The staff user behind a staff token, as identity answered the gateway. */
export const StaffActorMeta = z.object({
  id: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  role: StaffRole,
  email: Text.min(1).max(254),
});
export type StaffActorMeta = z.infer<typeof StaffActorMeta>;

/**
 * Meta of a staff API request (`/staff/v1`): the tenant and the staff user the gateway
 * authenticated with identity. Services validate it like any other input and record the staff
 * user as the actor of what they change.
 */
export const StaffMeta = z.object({
  request_id: RequestId,
  tenant_id: TenantId,
  staff: StaffActorMeta,
  /** The staff session behind the presented token (logout revokes it). */
  session_id: z.number().int().positive(),
  idempotency_key: Text.min(1).max(255).optional(),
});
export type StaffMeta = z.infer<typeof StaffMeta>;

/** Meta of the staff sign-in operations: no token yet; the body names the tenant. */
export const StaffSignInMeta = z.object({ request_id: RequestId });
export type StaffSignInMeta = z.infer<typeof StaffSignInMeta>;

/** Reply message: either a result or an error from the catalogue. */
export type ReplyMessage<T = unknown> =
  | { ok: true; data: T; message?: string; /** a stored response replayed under its Idempotency-Key */ replayed?: true }
  | { ok: false; error: ErrorBody };

/** NATS header carrying the request id across every hop. */
export const REQUEST_ID_HEADER = 'X-Request-Id';
