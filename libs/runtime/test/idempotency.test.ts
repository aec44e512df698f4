import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, loadConfig } from '../src/config.ts';
import { requestHash, stableStringify } from '../src/idempotency.ts';

describe('request hashing', () => {
  it('ignores key order and undefined fields', () => {
    expect(stableStringify({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: undefined } })).toBe(
      '{"a":{"d":[1,{"x":1,"y":2}]},"b":1}',
    );
    expect(requestHash('op', { a: 1, b: 2 })).toBe(requestHash('op', { b: 2, a: 1 }));
  });
  it('differs by operation and by parameters', () => {
    expect(requestHash('op', { a: 1 })).not.toBe(requestHash('other', { a: 1 }));
    expect(requestHash('op', { a: 1 })).not.toBe(requestHash('op', { a: 2 }));
  });
});

describe('config', () => {
  it('names every missing or wrong variable', () => {
    const schema = z.object({ A: z.string(), B: z.coerce.number().int() });
    expect(() => loadConfig(schema, { B: 'x' })).toThrow(ConfigError);
    try {
      loadConfig(schema, { B: 'x' });
    } catch (err) {
      expect((err as Error).message).toMatch(/A: .*\n.*B: /s);
    }
    expect(loadConfig(schema, { A: 'a', B: '3' })).toEqual({ A: 'a', B: 3 });
  });
});
