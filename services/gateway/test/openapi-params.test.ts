import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docs } from '../src/plugins/docs.ts';

/**
 * The integer path and query parameters as the served documents describe them: what a client
 * sends (`type: integer` with its bounds and default), not the gateway's coercion of HTTP's text
 * (a union of a digit-string pattern and an integer), so the SDK types them as numbers.
 */
type Parameter = { name: string; in: string; schema: Record<string, unknown> };
type Doc = { paths: Record<string, Record<string, { parameters: Parameter[] }>> };

let app: FastifyInstance;
const served: Record<string, Doc> = {};
const urls = ['/openapi.json', '/admin/openapi.json', '/staff/openapi.json'];

beforeAll(async () => {
  app = Fastify();
  await app.register(docs, { publicBaseUrl: 'http://127.0.0.1:3000' });
  for (const url of urls) {
    const r = await app.inject({ method: 'GET', url });
    expect(r.statusCode).toBe(200);
    served[url] = r.json<Doc>();
  }
});
afterAll(async () => app?.close());

function parameters(doc: Doc) {
  const out: { where: string; p: Parameter }[] = [];
  for (const [path, methods] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(methods))
      for (const p of op.parameters) if (p.in !== 'header') out.push({ where: `${method} ${path} ${p.name}`, p });
  return out;
}

/** Whether a schema (or one nested in it) is an anyOf/oneOf of a string pattern and an integer. */
function coercionUnion(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null) return false;
  for (const [key, branches] of Object.entries(schema)) {
    if (!['anyOf', 'oneOf'].includes(key) || !Array.isArray(branches)) continue;
    const types = branches.map(
      (b: { type?: unknown; pattern?: unknown }) => `${String(b.type)}${b.pattern ? '+pattern' : ''}`,
    );
    if (types.includes('string+pattern') && types.includes('integer')) return true;
  }
  return Object.values(schema).some(coercionUnion);
}

describe.each(urls)('%s', (url) => {
  it('documents no parameter as a union of a digit-string pattern and an integer', () => {
    const bad = parameters(served[url]!).filter(({ p }) => coercionUnion(p.schema));
    expect(bad.map((b) => b.where)).toEqual([]);
  });

  it('documents ids, limit and offset as integers with minimum and maximum', () => {
    const ints = parameters(served[url]!).filter(
      ({ p }) =>
        (p.name.endsWith('_id') && p.name !== 'app_id' && p.name !== 'job_id' && p.name !== 'import_id') ||
        ['limit', 'offset'].includes(p.name),
    );
    expect(ints.length).toBeGreaterThan(0);
    for (const { where, p } of ints) {
      expect(p.schema, where).toMatchObject({
        type: 'integer',
        minimum: expect.any(Number),
        maximum: expect.any(Number),
      });
      if (p.name.endsWith('_id'))
        expect(p.schema, where).toMatchObject({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
    }
  });

  it('gives every paginated list limit 1..100 by default 20, offset from 0 by default 0 (the audit log: 50, at most 200)', () => {
    const all = parameters(served[url]!);
    const paged = all.filter(({ p }) => p.name === 'offset').map(({ where }) => where.replace(/ offset$/, ''));
    expect(paged.length).toBeGreaterThan(0);
    for (const op of paged) {
      const limit = all.find(({ where }) => where === `${op} limit`)?.p.schema;
      const offset = all.find(({ where }) => where === `${op} offset`)?.p.schema;
      const audit = op === 'get /staff/v1/audit';
      expect(limit, op).toEqual({ type: 'integer', minimum: 1, maximum: audit ? 200 : 100, default: audit ? 50 : 20 });
      expect(offset, op).toEqual({ type: 'integer', minimum: 0, maximum: 1_000_000_000, default: 0 });
    }
  });
});
