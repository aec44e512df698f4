import { z } from 'zod';
import type { ErrorBody } from './errors.ts';

export const scopes = ['points_read', 'points_write', 'cashback_read', 'cashback_write', 'card_read'] as const;
export const Scope = z.enum(scopes);
export type Scope = z.infer<typeof Scope>;

/** Who is calling: filled in by the gateway after authentication, carried on every request message. */
export const Meta = z.object({
  request_id: z.string(),
  tenant_id: z.number().int(),
  app_id: z.string(),
  sandbox: z.boolean(),
  scopes: z.array(Scope),
  member_id: z.number().int().optional(),
  /** The member session behind the presented member token (refresh and logout act on it). */
  session_id: z.number().int().optional(),
  idempotency_key: z.string().optional(),
});
export type Meta = z.infer<typeof Meta>;

/** Meta of an operator (admin API) request: authenticated by the operator token, no tenant. */
export const AdminMeta = z.object({ request_id: z.string(), operator: z.literal(true) });
export type AdminMeta = z.infer<typeof AdminMeta>;

/** Request message on a `loyalty.<service>.<operation>` subject. */
export interface RequestMessage<T = unknown> {
  meta: Meta;
  data: T;
}

/** Reply message: either a result or an error from the catalogue. */
export type ReplyMessage<T = unknown> = { ok: true; data: T; message?: string } | { ok: false; error: ErrorBody };

/** NATS header carrying the request id across every hop. */
export const REQUEST_ID_HEADER = 'X-Request-Id';
