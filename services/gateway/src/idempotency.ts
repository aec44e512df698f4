import type { FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { AppError, type Operation } from '@loyalty/contracts';
import { inChildSpan, SpanKind, type Span } from '@loyalty/runtime';
import { header } from './headers.ts';

/** The longest Idempotency-Key accepted (the services' meta schemas take no more). */
const MAX_KEY_LENGTH = 255;

/**
 * The request's Idempotency-Key, for an operation that takes one (undefined when none is given or
 * the operation takes none); a key over 255 characters is a validation error naming the header.
 * Services check a key an operation needs is there (`idempotency_key_required`).
 */
export function idempotencyKeyOf(req: FastifyRequest, op: Pick<Operation, 'idempotent'>): string | undefined {
  const key = op.idempotent ? header(req, 'idempotency-key') : undefined;
  if (key !== undefined && key.length > MAX_KEY_LENGTH)
    throw new AppError('validation_error', undefined, {
      fields: [{ field: 'Idempotency-Key', message: `must be at most ${MAX_KEY_LENGTH} characters` }],
    });
  return key;
}

/** How long an Idempotency-Key stays bound to the first operation it was used on. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * Binds a tenant's Idempotency-Key to the operation it is first used on, for 24 hours, in Redis
 * (`<prefix>idem:<tenant>:<key>`, one atomic SET NX GET). The owning service keeps its own record
 * per operation (replay, or `idempotency_key_reused` for other parameters); what only the gateway
 * sees is the key reused on another operation, which it refuses with 409 here. Without Redis the
 * guarantee cannot be checked, so a keyed request is refused with 503 rather than let through.
 */
export async function claimIdempotencyKey(
  redis: Redis,
  prefix: string,
  claim: { tenantId: number; key: string; operation: string },
  timeoutMs: number,
  span?: Span,
): Promise<void> {
  const redisKey = `${prefix}idem:${claim.tenantId}:${claim.key}`;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const previous = await Promise.race([
    inChildSpan(
      span,
      'redis SET',
      { kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'redis', 'db.operation.name': 'SET' } },
      () => redis.set(redisKey, claim.operation, 'PX', IDEMPOTENCY_KEY_TTL_MS, 'NX', 'GET'),
    ),
    new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error('redis timeout')), timeoutMs);
    }),
  ])
    .catch(() => {
      throw new AppError('service_unavailable', 'The Idempotency-Key cannot be checked right now; try again.');
    })
    .finally(() => clearTimeout(timer));
  if (previous !== null && previous !== claim.operation)
    throw new AppError(
      'idempotency_key_reused',
      'This Idempotency-Key was already used on another operation; use a new key for each operation.',
    );
}
