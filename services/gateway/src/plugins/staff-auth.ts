import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import {
  AppError,
  internalOperations,
  type Operation,
  type StaffActorMeta,
  type StaffMeta,
  type Subjects,
} from '@loyalty/contracts';
import { callService, type NatsConnection } from '@loyalty/runtime';
import { header } from '../headers.ts';

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
  nc: NatsConnection;
  subjects: Subjects;
  timeoutMs: number;
}

/**
 * Staff token authentication of `/staff/v1` calls: `Authorization: Bearer <staff token>` resolved
 * through identity on every call (no cache: a logout or a deactivation acts at once on every
 * replica), the operation's least role checked, the Idempotency-Key header checked.
 */
export const staffAuthentication = fp<StaffAuthOptions>(
  async (app, { nc, subjects, timeoutMs }) => {
    const op = internalOperations.authenticateStaff;
    const subject = subjects.op(op.service, op.operation);
    app.decorateRequest('staffMeta', undefined);
    app.decorate('authenticateStaff', (operation: Operation) => async (req: FastifyRequest) => {
      const token = /^Bearer\s+(\S+)$/i.exec(header(req, 'authorization') ?? '')?.[1];
      if (!token) throw new AppError('staff_token_required');
      const reply = await callService<{ tenant_id: number; staff: StaffActorMeta; session_id: number }>(
        nc,
        subject,
        { meta: { request_id: req.id }, data: { staff_token: token } },
        req.id,
        timeoutMs,
      );
      if (!reply.ok) throw new AppError(reply.error.code, reply.error.message);
      const { tenant_id, staff, session_id } = reply.data;
      if (operation.staffRole === 'manager' && staff.role !== 'manager') throw new AppError('insufficient_role');
      const idempotencyKey = operation.idempotent ? header(req, 'idempotency-key') : undefined;
      if (idempotencyKey !== undefined && idempotencyKey.length > 255)
        throw new AppError('validation_error', undefined, {
          fields: [{ field: 'Idempotency-Key', message: 'must be at most 255 characters' }],
        });
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
