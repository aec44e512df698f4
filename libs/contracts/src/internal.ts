import { z } from 'zod';
import { Scope } from './messages.ts';

/**
 * Messages between services (and from the gateway) that are not HTTP routes.
 * Each entry: the owning service, its operation name, and request/reply schemas.
 */
export const AuthenticateRequest = z.object({
  app_id: z.string(),
  api_key: z.string(),
  member_token: z.string().optional(),
});
export const AuthenticateReply = z.object({
  tenant_id: z.number().int(),
  app_id: z.string(),
  sandbox: z.boolean(),
  scopes: z.array(Scope),
  member_id: z.number().int().optional(),
  session_id: z.number().int().optional(),
});
export type AuthenticateReply = z.infer<typeof AuthenticateReply>;

export const internalOperations = {
  /** Gateway -> identity: resolve app credentials (and a member token when presented). */
  authenticate: { service: 'identity', operation: 'internal.authenticate', request: AuthenticateRequest, reply: AuthenticateReply },
} as const;
