import { z } from 'zod';
import type { Operation, OperationInput } from './ops/types.ts';

/**
 * The one input schema of an operation: path parameters, query and body are validated by their
 * own schemas from the same merged object (the gateway sends `{...params, ...query, ...body}`)
 * and their outputs merged. Issues of every part are reported together.
 */
export function operationInput<O extends Pick<Operation, 'params' | 'query' | 'body'>>(
  op: O,
): z.ZodType<OperationInput<O>> {
  const parts = [op.params, op.query, op.body].filter((p): p is NonNullable<typeof p> => p !== undefined);
  return z.unknown().transform((input, ctx) => {
    const source = input && typeof input === 'object' ? input : {};
    let merged: Record<string, unknown> = {};
    for (const part of parts) {
      const r = part.safeParse(source);
      if (r.success) merged = { ...merged, ...(r.data as Record<string, unknown>) };
      else ctx.issues.push(...(r.error.issues as never[]));
    }
    // The parts' outputs together are the operation's input (each validated by its own schema).
    return merged as OperationInput<O>;
  }) as unknown as z.ZodType<OperationInput<O>>;
}
