import { z } from 'zod';
import { errorCatalogue } from './errors.ts';
import type { Operation } from './ops/types.ts';

type JsonSchema = Record<string, unknown>;

function schemaOf(type: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const s = z.toJSONSchema(type, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  delete s.$schema;
  return s;
}

const commonErrors = [
  'validation_error',
  'missing_credentials',
  'invalid_credentials',
  'rate_limited',
  'service_unavailable',
] as const;

function failureResponses(op: Operation): Record<string, unknown> {
  const codes = new Set<string>([...commonErrors, ...op.errors]);
  if (op.scope) codes.add('insufficient_scope');
  if (op.memberToken) {
    codes.add('member_token_required');
    codes.add('invalid_member_token');
  }
  if (op.idempotent) codes.add('idempotency_key_reused');
  const byStatus = new Map<number, string[]>();
  for (const code of codes) {
    const status = errorCatalogue[code as keyof typeof errorCatalogue].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, unknown> = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    out[String(status)] = {
      description: list.map((c) => `\`${c}\``).join(', '),
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Failure' } } },
    };
  }
  return out;
}

function parametersOf(op: Operation): unknown[] {
  const params: unknown[] = [];
  for (const [where, schema] of [
    ['path', op.params],
    ['query', op.query],
  ] as const) {
    if (!schema) continue;
    const json = schemaOf(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, prop] of Object.entries(json.properties ?? {})) {
      params.push({
        name,
        in: where,
        required: where === 'path' || (json.required ?? []).includes(name),
        schema: prop,
      });
    }
  }
  if (op.idempotent) {
    params.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'Retry-safe key: a retry with the same key replays the first response; the same key with other parameters is refused with 409.',
      schema: { type: 'string', maxLength: 255 },
    });
  }
  return params;
}

/** OpenAPI 3.1 document generated from the contract table. */
export function buildOpenApiDocument(ops: Record<string, Operation>, serverUrl = '/'): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [id, op] of Object.entries(ops)) {
    const path = op.path.replace(/:([a-z_]+)/g, '{$1}');
    const security: Record<string, string[]>[] = [
      op.memberToken ? { AppId: [], ApiKey: [], MemberToken: [] } : { AppId: [], ApiKey: [] },
    ];
    const success: JsonSchema = {
      type: 'object',
      required: ['success', 'data'],
      properties: {
        success: { const: true },
        data: schemaOf(op.response, 'output'),
        ...(op.topLevelMessage ? { message: { type: 'string' } } : {}),
      },
    };
    paths[path] ??= {};
    paths[path][op.method.toLowerCase()] = {
      operationId: id,
      summary: op.summary,
      tags: [op.tag],
      description: [
        op.scope ? `Scope: \`${op.scope}\`.` : 'No scope required.',
        op.memberToken ? 'Requires `X-Member-Token`.' : '',
      ]
        .filter(Boolean)
        .join(' '),
      security,
      parameters: parametersOf(op),
      ...(op.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: schemaOf(op.body, 'input') } } } }
        : {}),
      responses: {
        '200': { description: 'Success', content: { 'application/json': { schema: success } } },
        ...failureResponses(op),
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Loyalty platform API',
      version: '1.0.0',
      description:
        'Membership with one-time codes, cashback, points, reward claims and referrals. Every call sends `X-App-Id` and `X-Api-Key`. Failures use `{ success: false, error: { code, message, ... } }`.',
    },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      securitySchemes: {
        AppId: { type: 'apiKey', in: 'header', name: 'X-App-Id' },
        ApiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
        MemberToken: { type: 'apiKey', in: 'header', name: 'X-Member-Token' },
      },
      schemas: {
        Failure: {
          type: 'object',
          required: ['success', 'error'],
          properties: {
            success: { const: false },
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: { code: { type: 'string', enum: Object.keys(errorCatalogue) }, message: { type: 'string' } },
              additionalProperties: true,
            },
          },
        },
      },
    },
  };
}
