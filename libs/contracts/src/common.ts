import * as z from 'zod';

/**
 * An unpaired UTF-16 surrogate: PostgreSQL, NATS' JSON and most clients cannot carry it. With the
 * `u` flag a pair is one code point, so only a lone half matches (no lookbehind: the staff console
 * bundles these schemas for browsers that lack it, such as Safari before 16.4).
 */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** Whether a string can be stored and sent on as text: no NUL (PostgreSQL refuses it) and no lone surrogate. */
export function isStorableText(v: string): boolean {
  return !v.includes('\u0000') && !LONE_SURROGATE.test(v);
}

/**
 * The one string schema of the contracts: every string field of every operation (public,
 * operator, internal) starts from it, so a NUL byte or a lone surrogate is a `validation_error`
 * naming the field instead of a database error after the request was accepted.
 */
export const Text = z.string().refine(isStorableText, 'must not contain NUL characters or unpaired UTF-16 surrogates');

/** Email as members type it: trimmed and lower-cased before it is checked and stored. */
export const Email = Text.trim()
  .toLowerCase()
  .max(254)
  .pipe(z.email({ message: 'must be a valid email address' }));
/** Phone: digits with an optional leading +, separators removed. */
export const Phone = Text.trim()
  .transform((v) => v.replace(/[\s\-().]/g, ''))
  .pipe(z.string().regex(/^\+?[0-9]{6,20}$/, 'must be a phone number of 6 to 20 digits, optionally starting with +'));
/** An id in a JSON body (or a reply): a JSON integer, never a string, array or boolean. */
export const Id = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
/**
 * How a path or query parameter whose schema coerces HTTP's text ({@link IdParam}, {@link countParam})
 * is documented: as what a client sends, an integer with its bounds, instead of the coercion's
 * union of a digit string and an integer. The OpenAPI generator reads it (a `.default()` around
 * such a parameter adds its default).
 */
export const documentedParams = z.registry<{
  type: 'integer';
  minimum: number;
  maximum: number;
  description?: string;
}>();

const DIGITS = /^[0-9]{1,16}$/;

/**
 * An id in a path or a query string: plain decimal digits (no `1e3`, `0x10`, ` 7`, `+7`, `7.0`).
 * A number is accepted too because the owning service validates the gateway's already parsed input.
 */
export const IdParam = z
  .union([z.string().regex(DIGITS, 'must be a decimal integer (digits only)'), Id])
  .transform(Number)
  .pipe(Id)
  .describe('decimal digits only, at most 9007199254740991')
  .register(documentedParams, {
    type: 'integer',
    minimum: 1,
    maximum: Number.MAX_SAFE_INTEGER,
    description: 'decimal digits only, at most 9007199254740991',
  });
/** A non-negative count in a query string (`limit`, `offset`): plain decimal digits, as {@link IdParam}. */
export function countParam(min: number, max: number) {
  return z
    .union([z.string().regex(DIGITS, 'must be a decimal integer (digits only)'), z.number().int().min(min).max(max)])
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .register(documentedParams, { type: 'integer', minimum: min, maximum: max });
}
export const Timestamp = z.string().describe('ISO 8601 UTC timestamp');

/**
 * Whether `v` has at most `decimals` decimals, tolerating binary noise (0.1 + 0.2 is 0.30). A
 * non-zero value must be at least one unit of the last decimal: 1e-9 or 5e-324 are within the
 * tolerance of 0 but are not 0.
 */
function hasDecimals(v: number, decimals: number): boolean {
  const scaled = v * 10 ** decimals;
  const units = Math.round(scaled);
  return Math.abs(units - scaled) < 1e-6 && (units !== 0 || v === 0);
}
export const MONEY_MAX = 1_000_000_000;
/** Amount of money as a JSON number with at most two decimals, at most 1,000,000,000. */
export const Money = z
  .number()
  .nonnegative()
  .max(MONEY_MAX)
  .refine((v) => hasDecimals(v, 2), 'must have at most two decimals')
  .meta({ multipleOf: 0.01 })
  .describe('at most two decimals, at most 1000000000');
/** A positive amount of money (a purchase, a refund, a redemption): at least 0.01. */
export const PositiveMoney = z
  .number()
  .min(0.01, 'must be at least 0.01')
  .max(MONEY_MAX)
  .refine((v) => hasDecimals(v, 2), 'must have at most two decimals')
  .meta({ multipleOf: 0.01 })
  .describe('at least 0.01, at most two decimals, at most 1000000000');
/** A number with at most `decimals` decimals (percentages, ratios). */
export function decimalNumber(decimals: number) {
  return z.number().refine((v) => hasDecimals(v, decimals), `must have at most ${decimals} decimals`);
}

/** Bounds of free-form `metadata`, checked before anything is stored. */
export const METADATA_LIMITS = { depth: 5, keys: 50, bytes: 4096, keyLength: 64 } as const;

/** What is wrong with a metadata value, or undefined when it is within {@link METADATA_LIMITS}. */
export function metadataProblem(value: unknown): string | undefined {
  let keys = 0;
  // Iterative walk: a hostile value cannot overflow the stack here.
  const stack: { v: unknown; depth: number }[] = [{ v: value, depth: 1 }];
  for (let top = stack.pop(); top; top = stack.pop()) {
    const { v, depth } = top;
    if (v === null || typeof v === 'boolean') continue;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return 'numbers must be finite';
      continue;
    }
    if (typeof v === 'string') {
      if (!isStorableText(v)) return 'must not contain NUL characters or unpaired UTF-16 surrogates';
      continue;
    }
    if (typeof v !== 'object') return 'may hold only strings, numbers, booleans, null, objects and arrays';
    if (depth > METADATA_LIMITS.depth) return `must be nested at most ${METADATA_LIMITS.depth} levels deep`;
    if (Array.isArray(v)) {
      for (const item of v) stack.push({ v: item, depth: depth + 1 });
      continue;
    }
    if (Object.getPrototypeOf(v) !== Object.prototype && Object.getPrototypeOf(v) !== null)
      return 'may hold only strings, numbers, booleans, null, objects and arrays';
    for (const [k, item] of Object.entries(v)) {
      keys += 1;
      if (keys > METADATA_LIMITS.keys) return `must have at most ${METADATA_LIMITS.keys} keys in all`;
      if (k.length > METADATA_LIMITS.keyLength) return `keys must be at most ${METADATA_LIMITS.keyLength} characters`;
      if (!isStorableText(k)) return 'keys must not contain NUL characters or unpaired UTF-16 surrogates';
      stack.push({ v: item, depth: depth + 1 });
    }
  }
  if (new TextEncoder().encode(JSON.stringify(value)).length > METADATA_LIMITS.bytes)
    return `must be at most ${METADATA_LIMITS.bytes} bytes as JSON`;
  return undefined;
}

/** Free-form metadata stored with a movement: a JSON object within {@link METADATA_LIMITS}. */
export const Metadata = z
  .record(z.string(), z.unknown())
  .superRefine((m, ctx) => {
    const problem = metadataProblem(m);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .describe(
    `JSON object of strings, numbers, booleans, null, objects and arrays: nested at most ${METADATA_LIMITS.depth} levels, at most ${METADATA_LIMITS.keys} keys in all, keys at most ${METADATA_LIMITS.keyLength} characters, at most ${METADATA_LIMITS.bytes} bytes as JSON; no NUL characters or unpaired surrogates`,
  );

export const MaskedMember = z
  .object({
    email: z.string().nullable().describe('masked; null when the member has no email'),
    phone: z.string().nullable().describe('masked; null when the member has no phone'),
  })
  .meta({ id: 'MaskedMember' });

export const Pagination = z
  .object({
    limit: z.number().int(),
    offset: z.number().int(),
    total: z.number().int(),
    has_more: z.boolean(),
  })
  .meta({ id: 'Pagination' });

/** `limit`/`offset` query parameters. */
export function pageQuery(defaultLimit: number, maxLimit: number) {
  return {
    limit: countParam(1, maxLimit).default(defaultLimit),
    offset: countParam(0, 1_000_000_000).default(0),
  };
}
