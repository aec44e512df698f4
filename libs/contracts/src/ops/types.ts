import type { z } from 'zod';
import type { ErrorCode } from '../errors.ts';
import type { Scope } from '../messages.ts';
import type { ServiceName } from '../subjects.ts';

/**
 * One HTTP operation: everything the gateway needs to serve it and the OpenAPI generator
 * needs to document it. `operation` is the request/reply subject suffix in the owning service.
 */
export interface Operation {
  method: 'GET' | 'POST';
  /** Fastify-style path, e.g. `/api/v1/loyalty/claims/:request_id`. */
  path: string;
  service: ServiceName;
  operation: string;
  scope: Scope | null;
  memberToken: boolean;
  /** Mutating POSTs accept an Idempotency-Key header. */
  idempotent: boolean;
  summary: string;
  tag: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** The `data` of the success envelope. */
  response: z.ZodType;
  /** The success envelope also carries a top-level `message`. */
  topLevelMessage?: boolean;
  /** Failure codes this operation can answer beyond the common ones, for the reference. */
  errors: ErrorCode[];
}

export function defineOperations<const T extends Record<string, Operation>>(ops: T): T {
  return ops;
}
