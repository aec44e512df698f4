import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  buildOpenApiDocument,
  buildOperatorOpenApiDocument,
  errorCatalogue,
  Id,
  identityOperations,
  IdParam,
  internalOperations,
  jobResultScope,
  ledgerOperations,
  Metadata,
  Money,
  operations,
  operatorOperations,
  PositiveMoney,
  staffApiOperations,
  buildStaffOpenApiDocument,
  successStatus,
} from '../src/index.ts';
import { unwrap } from '../../../test/support/zod-schema.ts';

describe('job results', () => {
  it('need the scope of the operation that starts jobs of their kind', () => {
    for (const [kind, id] of [
      ['export.journal', 'exports.create'],
      ['export.members', 'exports.create'],
      ['import.validate', 'imports.create'],
      ['import.execute', 'imports.execute'],
      ['tiers.recompute', 'tiers.put'],
      ['member.export', 'members.export'],
      ['member.erase', 'members.erase'],
      ['member.merge', 'members.merge'],
    ] as const)
      expect(jobResultScope(kind), kind).toBe(operations[id]!.scope);
  });
});

describe('contract table', () => {
  it('has unique method + path and unique service operations', () => {
    const all = Object.values({ ...operations, ...operatorOperations, ...staffApiOperations });
    const routes = all.map((o) => `${o.method} ${o.path}`);
    expect(new Set(routes).size).toBe(routes.length);
    const subjects = all.map((o) => `${o.service}.${o.operation}`);
    expect(new Set(subjects).size).toBe(subjects.length);
  });

  it('names only catalogued errors', () => {
    for (const op of Object.values({ ...operations, ...operatorOperations, ...staffApiOperations })) {
      for (const code of op.errors) expect(errorCatalogue).toHaveProperty(code);
    }
  });

  it('generates an OpenAPI 3.1 document covering every operation', () => {
    const doc = buildOpenApiDocument(operations) as {
      openapi: string;
      paths: Record<string, Record<string, { operationId: string }>>;
    };
    expect(doc.openapi).toBe('3.1.0');
    for (const [id, op] of Object.entries(operations)) {
      const path = op.path.replace(/:([a-z_]+)/g, '{$1}');
      expect(doc.paths[path]?.[op.method.toLowerCase()]?.operationId).toBe(id);
    }
  });
});

type Doc = {
  paths: Record<string, Record<string, Op>>;
  components: { securitySchemes: Record<string, unknown> };
};
type Op = {
  operationId: string;
  security: unknown;
  responses: Record<string, { content?: Record<string, { schema: { allOf?: FailureCodes[] } }> }>;
};
type FailureCodes = { properties: { error: { properties: { code: { enum: string[] } } } } };
const codesOf = (op: Op, status: string): unknown =>
  op.responses[status]?.content?.['application/json']?.schema.allOf?.[1]?.properties.error.properties.code.enum;

describe('staff document', () => {
  it('documents the staff API under /staff/v1 with the staff bearer token, roles and sign-in without one', () => {
    const doc = buildStaffOpenApiDocument(staffApiOperations) as Doc;
    expect(Object.keys(doc.components.securitySchemes)).toEqual(['StaffToken']);
    for (const [id, op] of Object.entries(staffApiOperations)) {
      expect(op.path.startsWith('/staff/v1/')).toBe(true);
      const documented = doc.paths[op.path.replace(/:([a-z_]+)/g, '{$1}')]![op.method.toLowerCase()]!;
      expect(documented.operationId).toBe(id);
      if (op.staffRole) {
        expect(documented.security).toEqual([{ StaffToken: [] }]);
        expect(codesOf(documented, '401')).toEqual(['staff_token_required', 'invalid_staff_token']);
        // A deactivated tenant's staff are refused on every route (tenant offboarding).
        expect(codesOf(documented, '403') ?? []).toEqual(
          op.staffRole === 'manager' ? ['tenant_inactive', 'insufficient_role'] : ['tenant_inactive'],
        );
      } else expect(documented.security).toEqual([]);
    }
    expect(staffApiOperations['staff.adjustments.create']!.staffRole).toBe('manager');
    expect(staffApiOperations['staff.claims.approve']!.staffRole).toBe('staff');
  });
});

describe('operator document', () => {
  it('documents the operator API with bearer security only, apart from the merchant document', () => {
    const doc = buildOperatorOpenApiDocument(operatorOperations) as Doc;
    expect(Object.keys(doc.components.securitySchemes)).toEqual(['OperatorToken']);
    for (const [id, op] of Object.entries(operatorOperations)) {
      const documented = doc.paths[op.path.replace(/:([a-z_]+)/g, '{$1}')]![op.method.toLowerCase()]!;
      expect(documented.operationId).toBe(id);
      expect(documented.security).toEqual([{ OperatorToken: [] }]);
      expect(codesOf(documented, '401')).toEqual(['invalid_operator_token']);
    }
    const merchant = buildOpenApiDocument(operations) as Doc;
    expect(Object.keys(merchant.paths).filter((p) => p.startsWith('/admin/'))).toEqual([]);
  });

  it('lists exactly the codes of each status per operation', () => {
    const merchant = buildOpenApiDocument(operations) as Doc;
    const earn = merchant.paths['/api/v1/cashback/cashback/earn']!.post!;
    expect(codesOf(earn, '401')).toEqual(expect.arrayContaining(['missing_credentials', 'invalid_credentials']));
    expect(codesOf(earn, '400')).toEqual(expect.arrayContaining(['invalid_json', 'validation_error']));
    expect(codesOf(earn, '401')).not.toContain('invalid_operator_token');
  });
});

describe('named schemas', () => {
  it('puts the resource schemas in components.schemas and references them', () => {
    const merchant = buildOpenApiDocument(operations) as Doc & { components: { schemas: Record<string, unknown> } };
    const operator = buildOperatorOpenApiDocument(operatorOperations) as typeof merchant;
    const names = [...Object.keys(merchant.components.schemas), ...Object.keys(operator.components.schemas)];
    for (const name of [
      'Member',
      'MaskedMember',
      'CashbackCard',
      'Card',
      'CashbackConfig',
      'Reward',
      'CashbackTransaction',
      'PointsTransaction',
      'Pagination',
      'ClaimRequest',
      'Referral',
      'ReferralStats',
      'TopReferrer',
      'BalanceWarning',
      'Failure',
    ])
      expect(names).toContain(name);
    const text = JSON.stringify([merchant, operator]);
    expect(text).not.toContain('#/$defs/');
    for (const [, name] of text.matchAll(/"#\/components\/schemas\/([A-Za-z]+)"/g))
      expect(names, `${name} is referenced`).toContain(name);
    expect(text).toContain('"#/components/schemas/ClaimRequest"');
  });
});

describe('document says what the server does', () => {
  const doc = buildOpenApiDocument(operations) as Record<string, unknown>;
  const at = (...path: string[]): unknown =>
    path.reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], doc);
  const body = (path: string) => at('paths', path, 'post', 'requestBody', 'content', 'application/json', 'schema');

  it('expresses "member_id, email or phone" and "email or phone" as anyOf of required lists', () => {
    const byMember = [{ required: ['member_id'] }, { required: ['email'] }, { required: ['phone'] }];
    for (const path of [
      '/api/v1/cashback/cashback/earn',
      '/api/v1/cashback/cashback/refund',
      '/api/v1/loyalty/points/earn',
      '/api/v1/loyalty/points/refund',
    ])
      expect(body(path), path).toMatchObject({ anyOf: byMember });
    expect(body('/api/v1/auth/member/check')).toMatchObject({
      anyOf: [{ required: ['email'] }, { required: ['phone'] }],
    });
  });

  it('bounds money (0.01 up, two decimals) and makes ids integers', () => {
    const earn = body('/api/v1/cashback/cashback/earn') as { properties: Record<string, Record<string, unknown>> };
    expect(earn.properties.purchase_amount).toMatchObject({ type: 'number', minimum: 0.01, multipleOf: 0.01 });
    expect(earn.properties.card_id).toMatchObject({ type: 'integer' });
    expect(earn.properties.member_id).toMatchObject({ type: 'integer' });
  });

  it('declares absent contact data as null and only the four public claim statuses', () => {
    expect(at('components', 'schemas', 'MaskedMember', 'properties', 'email', 'type')).toEqual(['string', 'null']);
    expect(at('components', 'schemas', 'ClaimRequest', 'properties', 'status', 'enum')).toEqual([
      'pending',
      'approved',
      'rejected',
      'expired',
    ]);
  });

  it('lists the edge failures on every operation and documents the response headers', () => {
    for (const [id, op] of Object.entries(operations)) {
      const documented = at('paths', op.path.replace(/:([a-z_]+)/g, '{$1}'), op.method.toLowerCase()) as Op & {
        responses: Record<string, { headers: Record<string, unknown> }>;
      };
      expect(codesOf(documented, '400'), id).toEqual(expect.arrayContaining(['invalid_json', 'validation_error']));
      expect(codesOf(documented, '413'), id).toEqual(['payload_too_large']);
      expect(codesOf(documented, '415'), id).toEqual(['unsupported_media_type']);
      expect(codesOf(documented, '500'), id).toEqual(['internal_error']);
      expect(Object.keys(documented.responses['429']!.headers), id).toContain('Retry-After');
      const success = documented.responses[String(successStatus(op))]!;
      expect(Object.keys(success.headers), id).toEqual(
        expect.arrayContaining(['X-Request-Id', 'X-RateLimit-Limit', 'RateLimit-Policy', 'RateLimit']),
      );
      if (op.idempotent) {
        expect(Object.keys(success.headers), id).toContain('Idempotent-Replayed');
        expect(codesOf(documented, '409'), id).toEqual(
          expect.arrayContaining(['idempotency_key_reused', 'idempotency_in_progress']),
        );
      }
    }
    const earn = at('paths', '/api/v1/loyalty/points/earn', 'post') as Op;
    expect(codesOf(earn, '422')).toEqual(expect.arrayContaining(['member_inactive', 'balance_limit_exceeded']));
    const refund = at('paths', '/api/v1/cashback/cashback/refund', 'post') as Op;
    expect(codesOf(refund, '422')).toContain('refund_reference_mismatch');
  });
});

describe('money', () => {
  it('accepts at most two decimals', () => {
    expect(Money.safeParse(19.99).success).toBe(true);
    expect(Money.safeParse(0.1 + 0.2).success).toBe(true); // 0.30000000000000004 is 0.30 to the cent
    expect(Money.safeParse(1.234).success).toBe(false);
    expect(Money.safeParse(-1).success).toBe(false);
  });
});

describe('hostile input', () => {
  it('money: sub-cent values are not zero, positive amounts start at 0.01, at most 1,000,000,000', () => {
    for (const v of [1e-9, 5e-324, 0.001, 1_000_000_000.01]) expect(Money.safeParse(v).success, String(v)).toBe(false);
    expect(Money.safeParse(0).success).toBe(true);
    for (const v of [0, 1e-9, 0.009]) expect(PositiveMoney.safeParse(v).success, String(v)).toBe(false);
    expect(PositiveMoney.safeParse(0.01).success).toBe(true);
    expect(PositiveMoney.safeParse(1_000_000_000).success).toBe(true);
  });

  it('ids: JSON integers in bodies, plain decimal digits in paths and queries', () => {
    for (const v of [[7], '7', true, 7.5, 0, 2 ** 53]) expect(Id.safeParse(v).success, JSON.stringify(v)).toBe(false);
    expect(Id.safeParse(7).success).toBe(true);
    for (const v of ['1e3', '0x10', ' 7', '+7', '7.0', '-1', '9007199254740993', '', '\u0000'])
      expect(IdParam.safeParse(v).success, v).toBe(false);
    expect(IdParam.parse('007')).toBe(7);
    expect(IdParam.parse(7)).toBe(7);
  });

  it('metadata: scalars, objects and arrays within depth, key, size and text bounds', () => {
    const ok = { till: 3, tags: ['a', 'b'], nested: { a: { b: { c: null } } } };
    expect(Metadata.safeParse(ok).success).toBe(true);
    for (const bad of [
      { a: { b: { c: { d: { e: { f: 1 } } } } } },
      Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])),
      { a: 'x'.repeat(4100) },
      { ['k'.repeat(65)]: 1 },
      { 'a\u0000': 1 },
      { a: '\uD800' },
    ])
      expect(Metadata.safeParse(bad).success, JSON.stringify(bad).slice(0, 60)).toBe(false);
  });

  it('every string field of every contract input (public, operator, internal) refuses NUL and lone surrogates', () => {
    const inputs: [string, z.ZodType][] = [];
    for (const [id, op] of Object.entries({ ...operations, ...operatorOperations })) {
      for (const part of [op.params, op.query, op.body]) if (part) inputs.push([id, part]);
    }
    for (const [id, op] of Object.entries({ ...internalOperations, ...identityOperations, ...ledgerOperations }))
      inputs.push([id, op.request]);
    let checked = 0;
    for (const [id, schema] of inputs) {
      for (const [name, field] of stringFields(schema)) {
        for (const hostile of ['a\u0000b', '\uD800', 'x\uDC00']) {
          expect(field.safeParse(hostile).success, `${id} ${name} ${JSON.stringify(hostile)}`).toBe(false);
        }
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(30);
  });

  it('the OpenAPI document states the metadata bounds', () => {
    const doc = JSON.stringify(buildOpenApiDocument(operations));
    expect(doc).toContain('nested at most 5 levels, at most 50 keys in all, keys at most 64 characters');
  });
});

/** The string-typed fields of an object schema, nested objects included. */
function stringFields(schema: z.ZodType, prefix = ''): [string, z.ZodType][] {
  const shape = (unwrap(schema) as z.ZodObject).shape ?? {};
  const out: [string, z.ZodType][] = [];
  for (const [name, field] of Object.entries(shape)) {
    const type = unwrap(field)._zod.def.type;
    if (type === 'string') out.push([prefix + name, field]);
    if (type === 'object') out.push(...stringFields(field, `${prefix}${name}.`));
  }
  return out;
}

describe("the edge's own answers", () => {
  type Shared = { content: { 'application/json': { schema: { allOf: FailureCodes[] } } }; headers?: object };
  const documents = [
    ['merchant', buildOpenApiDocument(operations), operations],
    ['operator', buildOperatorOpenApiDocument(operatorOperations), operatorOperations],
    ['staff', buildStaffOpenApiDocument(staffApiOperations), staffApiOperations],
  ] as const;

  it.each(documents)(
    'are shared responses of the %s document, referenced by the operations they can answer',
    (_, d, ops) => {
      const doc = d as Doc & { components: { responses: Record<string, Shared> } };
      const codes = Object.fromEntries(
        Object.entries(doc.components.responses).map(([name, r]) => [
          name,
          r.content['application/json'].schema.allOf[1]!.properties.error.properties.code.enum,
        ]),
      );
      expect(codes).toEqual({
        RouteNotFound: ['route_not_found'],
        MethodNotAllowed: ['method_not_allowed'],
        UriTooLong: ['uri_too_long'],
        HeadersTooLarge: ['headers_too_large'],
      });
      expect(doc.components.responses.MethodNotAllowed!.headers).toHaveProperty('Allow');
      for (const [id, op] of Object.entries(ops)) {
        const documented = doc.paths[op.path.replace(/:([a-z_]+)/g, '{$1}')]![op.method.toLowerCase()]! as Op & {
          responses: Record<string, { $ref?: string }>;
        };
        expect(documented.responses['431'], id).toEqual({ $ref: '#/components/responses/HeadersTooLarge' });
        // A server without this operation (another version) answers 404 or 405 for it.
        expect(documented.responses['405'], id).toEqual({ $ref: '#/components/responses/MethodNotAllowed' });
        const notFound = documented.responses['404']!;
        if (notFound.$ref) expect(notFound.$ref, id).toBe('#/components/responses/RouteNotFound');
        else expect(codesOf(documented, '404'), id).toEqual(expect.arrayContaining(['route_not_found']));
        if (op.path.includes('/:'))
          expect(documented.responses['414'], id).toEqual({ $ref: '#/components/responses/UriTooLong' });
        else expect(documented.responses['414'], id).toBeUndefined();
      }
    },
  );
});
