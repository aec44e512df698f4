import * as z from 'zod';
import { describe, expect, it } from 'vitest';

/**
 * zod is patched (patches/zod@4.6.7.patch) so that running a schema's checks allocates no closure
 * context per call; the first check that answers a promise hands the rest to the original loop.
 * What the checks answer must be what they answered before (these expectations were taken from
 * zod unpatched): every check runs in order, an aborting check stops the ones after it, an
 * asynchronous check's issue comes after the synchronous ones, and a promise in a synchronous
 * parse is refused.
 */
describe('schema checks (patched runner)', () => {
  const messages = (r: { error?: z.ZodError }) => r.error?.issues.map((i) => i.message) ?? [];

  it('runs the synchronous checks in order; a number that is not whole stops the ones after it', () => {
    const n = z.number().int('not whole').min(5, 'below 5').max(10, 'above 10');
    expect(messages(n.safeParse(2.5))).toEqual(['not whole']);
    expect(messages(n.safeParse(3))).toEqual(['below 5']);
    expect(messages(n.safeParse(11))).toEqual(['above 10']);
    expect(n.safeParse(7)).toEqual({ success: true, data: 7 });
  });

  it('stops at an aborting check', () => {
    const s = z
      .string()
      .refine((v) => v.length > 0, { message: 'empty', abort: true })
      .refine((v) => v !== 'x', 'x');
    expect(messages(s.safeParse(''))).toEqual(['empty']);
  });

  it('mixes asynchronous and synchronous checks in a parseAsync: every one runs, the asynchronous issue last', async () => {
    const n = z
      .number()
      .min(5, 'below 5')
      .refine(async (v) => v % 2 === 0, 'odd')
      .max(10, 'above 10');
    expect(messages(await n.safeParseAsync(3))).toEqual(['below 5', 'odd']);
    expect(messages(await n.safeParseAsync(11))).toEqual(['above 10', 'odd']);
    expect(await n.safeParseAsync(8)).toEqual({ success: true, data: 8 });
  });

  it('refuses an asynchronous check in a synchronous parse', () => {
    const s = z.string().refine(async () => true);
    expect(() => s.safeParse('a')).toThrow(z.core.$ZodAsyncError);
  });

  it('reports the issues of an object field by field', () => {
    const o = z.object({ a: z.number().int().min(1), b: z.string().max(3) });
    expect(o.safeParse({ a: 0.5, b: 'abcd' }).error?.issues.map((i) => i.path.join('.'))).toEqual(['a', 'b']);
  });
});
