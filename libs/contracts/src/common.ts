import { z } from 'zod';

/** Email as members type it: trimmed and lower-cased before it is checked and stored. */
export const Email = z
  .string()
  .trim()
  .toLowerCase()
  .max(254)
  .pipe(z.email({ message: 'must be a valid email address' }));
/** Phone: digits with an optional leading +, separators removed. */
export const Phone = z
  .string()
  .trim()
  .transform((v) => v.replace(/[\s\-().]/g, ''))
  .pipe(z.string().regex(/^\+?[0-9]{6,20}$/, 'must be a phone number of 6 to 20 digits, optionally starting with +'));
export const Id = z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER);
export const Timestamp = z.string().describe('ISO 8601 UTC timestamp');
/** Amount of money as a JSON number with at most two decimals. */
export const Money = z
  .number()
  .nonnegative()
  .max(1_000_000_000)
  .refine((v) => Math.abs(Math.round(v * 100) - v * 100) < 1e-6, 'must have at most two decimals');

export const MaskedMember = z.object({ email: z.string(), phone: z.string().nullable() });

export const Pagination = z.object({
  limit: z.number().int(),
  offset: z.number().int(),
  total: z.number().int(),
  has_more: z.boolean(),
});

/** `limit`/`offset` query parameters. */
export function pageQuery(defaultLimit: number, maxLimit: number) {
  return {
    limit: z.coerce.number().int().min(1).max(maxLimit).default(defaultLimit),
    offset: z.coerce.number().int().min(0).default(0),
  };
}
