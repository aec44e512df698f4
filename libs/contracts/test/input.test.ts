import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildOperationInput, operationInput } from '../src/input.ts';

const op = {
  params: z.object({ request_id: z.coerce.number().int().positive() }),
  query: z.object({ verbose: z.enum(['true', 'false']).optional() }),
  body: z.object({ staff_note: z.string().optional() }),
};

describe('buildOperationInput', () => {
  it('merges the validated parts', () => {
    expect(
      buildOperationInput(op, { params: { request_id: '7' }, query: { verbose: 'true' }, body: { staff_note: 'ok' } }),
    ).toEqual({ ok: true, data: { request_id: 7, verbose: 'true', staff_note: 'ok' } });
  });

  it('refuses a path parameter given again in the query or the body', () => {
    const r = buildOperationInput(op, {
      params: { request_id: '7' },
      query: { request_id: '8' },
      body: { request_id: 8 },
    });
    expect(r).toEqual({
      ok: false,
      fields: [
        { field: 'request_id', message: 'is a path parameter; it cannot be given in the query' },
        { field: 'request_id', message: 'is a path parameter; it cannot be given in the body' },
      ],
    });
  });

  it('refuses a body that is not a JSON object, and reports every part together', () => {
    const r = buildOperationInput(op, { params: { request_id: 'x' }, query: {}, body: [1, 2] });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.fields.map((f) => f.field)).toEqual(['request_id', '(body)']);
  });

  it('a strict body refuses the fields it does not have, naming each, but not the path parameters', () => {
    const patch = { params: op.params, body: z.object({ name: z.string().optional() }).strict() };
    expect(buildOperationInput(patch, { params: { request_id: '7' }, body: { name: 'x' } })).toEqual({
      ok: true,
      data: { request_id: 7, name: 'x' },
    });
    expect(buildOperationInput(patch, { params: { request_id: '7' }, body: { nmae: 'x', colour: 1 } })).toEqual({
      ok: false,
      fields: [
        { field: 'nmae', message: 'is not a field of this request (misspelt?)' },
        { field: 'colour', message: 'is not a field of this request (misspelt?)' },
      ],
    });
    // The service validates the merged object the same way: the path parameter is not a body field.
    expect(operationInput(patch).safeParse({ request_id: 7, name: 'x' }).success).toBe(true);
    const refused = operationInput(patch).safeParse({ request_id: 7, nmae: 'x' });
    expect(refused.success || refused.error.issues.map((i) => i.path)).toEqual([['nmae']]);
  });

  it('operationInput validates the merged data a service receives the same way', () => {
    expect(operationInput(op).parse({ request_id: '7', staff_note: 'ok' })).toEqual({
      request_id: 7,
      staff_note: 'ok',
    });
    expect(operationInput(op).safeParse({ request_id: 0 }).success).toBe(false);
  });
});
