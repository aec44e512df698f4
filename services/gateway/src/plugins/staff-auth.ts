import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { AppError, internalOperations, type Operation, type StaffMeta } from '@loyalty/contracts';
import type { ServiceClient } from '@loyalty/runtime';
import { header } from '../headers.ts';
import { idempotencyKeyOf } from '../idempotency.ts';

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
  /** Calls identity's operations, replies checked against their contracts. */
  identity: ServiceClient;
}

/**
 * Staff token authentication of `/staff/v1` calls: `Authorization: Bearer <staff token>` resolved
 * through identity on every call (no cache: a logout or a deactivation acts at once on every
 * replica), the operation's least role checked, the Idempotency-Key header checked.
 */
export const staffAuthentication = fp<StaffAuthOptions>(
  async (app, { identity }) => {
    app.decorateRequest('staffMeta', undefined);
    app.decorate('authenticateStaff', (operation: Operation) => async (req: FastifyRequest) => {
      const token = /^Bearer\s+(\S+)$/i.exec(header(req, 'authorization') ?? '')?.[1];
      if (!token) throw new AppError('staff_token_required');
      const { tenant_id, staff, session_id } = await identity.call(
        internalOperations.authenticateStaff,
        { request_id: req.id },
        { staff_token: token },
      );
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
