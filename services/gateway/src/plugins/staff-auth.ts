import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { AppError, type Operation, type StaffMeta } from '@loyalty/contracts';
import { header } from '../headers.ts';
import { idempotencyKeyOf } from '../idempotency.ts';
import type { StaffCredentialResolver } from '../staff-credentials.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The `meta` of a staff API call: tenant and staff user; set by `authenticateStaff(op)`. */
    staffMeta: StaffMeta | undefined;
  }
  interface FastifyInstance {
    /** The preValidation hook of a `/staff/v1` operation: staff token, role, Idempotency-Key, `req.staffMeta`. */
    authenticateStaff(op: Operation): (req: FastifyRequest) => Promise<void>;
  }
}

export interface StaffAuthOptions {
  /** Resolves staff tokens through identity, verified ones cached briefly (staff-credentials.ts). */
  staffCredentials: StaffCredentialResolver;
}

/**
 * Staff token authentication of `/staff/v1` calls: `Authorization: Bearer <staff token>` resolved
 * through identity and trusted for a short TTL (a sign-out, a role change or a deactivation is
 * broadcast by identity and forgotten at once on every replica), the operation's least role
 * checked, the Idempotency-Key header checked.
 */
export const staffAuthentication = fp<StaffAuthOptions>(
  async (app, { staffCredentials }) => {
    app.decorateRequest('staffMeta', undefined);
    app.decorate('authenticateStaff', (operation: Operation) => async (req: FastifyRequest) => {
      const token = /^Bearer\s+(\S+)$/i.exec(header(req, 'authorization') ?? '')?.[1];
      if (!token) throw new AppError('staff_token_required');
      const { tenant_id, staff, session_id } = await staffCredentials.resolve(token, req.id);
      if (operation.staffRole === 'manager' && staff.role !== 'manager') throw new AppError('insufficient_role');
      const idempotencyKey = idempotencyKeyOf(req, operation);
      req.staffMeta = {
        request_id: req.id,
        tenant_id,
        staff,
        session_id,
        ...(idempotencyKey !== undefined ? { idempotency_key: idempotencyKey } : {}),
      };
    });
  },
  { name: 'gateway-staff-auth', fastify: '5.x' },
);
