import { z } from 'zod';
import { documentedParams } from './common.ts';
import { errorCatalogue, type ErrorCode } from './errors.ts';
import type { Operation } from './ops/types.ts';
import { WEBHOOK_HEADERS, webhookEnvelopeSchema, webhookEventNames, webhookEventTypes } from './webhook-events.ts';

type JsonSchema = Record<string, unknown>;

const isRecord = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `$ref`s to `#/$defs/<id>` rewritten to `#/components/schemas/<rename(id)>`, everywhere in `schema`. */
function rewriteRefs(schema: JsonSchema, rename: (id: string) => string): JsonSchema {
  const value = (v: unknown): unknown => (Array.isArray(v) ? v.map(value) : isRecord(v) ? rewriteRefs(v, rename) : v);
  const out: JsonSchema = {};
  for (const [k, item] of Object.entries(schema)) {
    if (k === '$ref' && typeof item === 'string' && item.startsWith('#/$defs/'))
      out[k] = `#/components/schemas/${rename(item.slice('#/$defs/'.length))}`;
    else out[k] = value(item);
  }
  return out;
}

/**
 * A parameter that coerces HTTP's text (common.ts' `documentedParams`) is documented as the
 * integer a client sends, not as the coercion's union of a digit string and an integer; a
 * `.default()` around it adds the default (zod drops defaults of transforming input schemas).
 */
function documentParam(ctx: { zodSchema: z.core.$ZodTypes; jsonSchema: JsonSchema }): void {
  const { zodSchema, jsonSchema } = ctx;
  if (zodSchema instanceof z.ZodDefault) {
    if (documentedParams.has(zodSchema.unwrap())) jsonSchema.default = zodSchema.def.defaultValue;
    return;
  }
  const documented = documentedParams.get(zodSchema);
  if (!documented) return;
  for (const key of Object.keys(jsonSchema)) delete jsonSchema[key];
  Object.assign(jsonSchema, documented);
}

/**
 * Named schemas (`.meta({ id })` on a resource schema) go to `components.schemas` and are referenced;
 * the same id must describe one schema in a document (an input and an output form that differ get
 * an `Input` suffix for the input form).
 */
class SchemaCollector {
  readonly schemas: Record<string, JsonSchema> = { Failure: failureSchema() };

  schemaOf(type: z.ZodType, io: 'input' | 'output'): JsonSchema {
    const {
      $schema: _dialect,
      $defs,
      ...s
    } = z.toJSONSchema(type, {
      io,
      unrepresentable: 'any',
      target: 'draft-2020-12',
      override: documentParam,
    });
    const defs: Record<string, JsonSchema> = {};
    for (const [id, def] of Object.entries($defs ?? {})) if (isRecord(def)) defs[id] = def;
    const same = (id: string) =>
      this.schemas[id] === undefined ||
      JSON.stringify(this.schemas[id]) === JSON.stringify(rewriteRefs(defs[id] ?? {}, (x) => x));
    const names = new Map<string, string>();
    for (const id of Object.keys(defs)) {
      if (same(id)) names.set(id, id);
      else if (io === 'input') names.set(id, `${id}Input`);
      else throw new Error(`two different schemas are named ${id}`);
    }
    const rename = (id: string) => names.get(id) ?? id;
    for (const [id, def] of Object.entries(defs)) {
      const rewritten = rewriteRefs(def, rename);
      const name = rename(id);
      if (this.schemas[name] !== undefined && JSON.stringify(this.schemas[name]) !== JSON.stringify(rewritten))
        throw new Error(`two different schemas are named ${name}`);
      this.schemas[name] = rewritten;
    }
    return rewriteRefs(s, rename);
  }
}

/**
 * Failures any operation can answer: the edge refuses the request before it reaches the
 * operation (body, headers, limits) or the owning service fails.
 */
const everyOperationErrors: ErrorCode[] = [
  'validation_error',
  'invalid_json',
  'invalid_header',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'internal_error',
  'service_unavailable',
];

/** The two audiences of the API, each with its own document. */
type Audience = 'merchant' | 'operator' | 'staff';

/** Every failure code `op` can answer in the document of `audience`. */
export function errorCodesOf(op: Operation, audience: Audience = 'merchant'): ErrorCode[] {
  const codes = new Set<ErrorCode>(everyOperationErrors);
  if (audience === 'operator') codes.add('invalid_operator_token');
  else if (audience === 'staff') {
    if (op.staffRole) {
      codes.add('staff_token_required');
      codes.add('invalid_staff_token');
      codes.add('tenant_inactive');
    }
    if (op.staffRole === 'manager') codes.add('insufficient_role');
  } else {
    codes.add('missing_credentials');
    codes.add('invalid_credentials');
    codes.add('tenant_inactive');
  }
  if (op.scope) codes.add('insufficient_scope');
  if (op.memberToken) {
    codes.add('member_token_required');
    codes.add('invalid_member_token');
  }
  if (op.idempotent) {
    codes.add('idempotency_key_reused');
    codes.add('idempotency_in_progress');
  }
  for (const code of op.errors) codes.add(code);
  return [...codes];
}

const ref = (kind: 'schemas' | 'headers' | 'responses', name: string) => ({ $ref: `#/components/${kind}/${name}` });

/** Headers of every response of `audience`'s operations; `Retry-After` on 429 and 503. */
function responseHeaders(audience: Audience, status: number, op: Operation): Record<string, unknown> {
  const headers: Record<string, unknown> = { 'X-Request-Id': ref('headers', 'XRequestId') };
  if (audience === 'merchant') {
    for (const name of [
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
      'RateLimit-Policy',
      'RateLimit',
    ])
      headers[name] = ref('headers', name.replace(/-/g, ''));
  }
  if (status === 429 || status === 503) headers['Retry-After'] = ref('headers', 'RetryAfter');
  if (status === 200 && op.idempotent) headers['Idempotent-Replayed'] = ref('headers', 'IdempotentReplayed');
  return headers;
}

/** The failure envelope with `error.code` one of `codes`. */
const failureOf = (codes: readonly ErrorCode[]) => ({
  allOf: [
    ref('schemas', 'Failure'),
    { type: 'object', properties: { error: { type: 'object', properties: { code: { enum: [...codes] } } } } },
  ],
});

/**
 * Answers of the HTTP edge itself, before (or instead of) any operation, shared by every document
 * as `components.responses` and referred to by every operation, so that generated clients know them:
 * - `RouteNotFound` (404 `route_not_found`): no route has this path (for a documented operation: a
 *   server that does not have it, e.g. another version);
 * - `MethodNotAllowed` (405 `method_not_allowed`): the path is a route, the method is not one of
 *   its operations (likewise); `Allow` lists those;
 * - `UriTooLong` (414 `uri_too_long`): a path parameter over 100 characters;
 * - `HeadersTooLarge` (431 `headers_too_large`): request headers over the server's limit (answered
 *   by the HTTP parser, so without the API's other headers, and the connection is closed).
 */
export const edgeResponses = {
  RouteNotFound: { status: 404, code: 'route_not_found' },
  MethodNotAllowed: { status: 405, code: 'method_not_allowed' },
  UriTooLong: { status: 414, code: 'uri_too_long' },
  HeadersTooLarge: { status: 431, code: 'headers_too_large' },
} as const satisfies Record<string, { status: number; code: ErrorCode }>;

function edgeResponseComponents(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, { code }] of Object.entries(edgeResponses)) {
    out[name] = {
      description: `\`${code}\`: ${errorCatalogue[code].message}`,
      ...(code === 'method_not_allowed'
        ? {
            headers: {
              Allow: {
                description: "The path's methods, e.g. `GET, POST`.",
                required: true,
                schema: { type: 'string' },
              },
            },
          }
        : {}),
      content: { 'application/json': { schema: failureOf([code]) } },
    };
  }
  return out;
}

/**
 * The edge's answers a request for an operation can get: 404 `route_not_found` and 405 from a
 * server without the operation (the 404 merged into the operation's own when it has one), 431 for
 * any request, 414 for a path with parameters (one too long).
 */
function edgeFailures(op: Operation, own: Map<number, ErrorCode[]>): Record<string, unknown> {
  const out: Record<string, unknown> = {
    '405': ref('responses', 'MethodNotAllowed'),
    '431': ref('responses', 'HeadersTooLarge'),
  };
  if (op.path.includes('/:')) out['414'] = ref('responses', 'UriTooLong');
  if (!own.has(404)) out['404'] = ref('responses', 'RouteNotFound');
  return out;
}

function failureResponses(op: Operation, audience: Audience): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(op, audience)) {
    const status = errorCatalogue[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const own = new Map(byStatus);
  const notFound = byStatus.get(404);
  if (notFound) byStatus.set(404, ['route_not_found', ...notFound]);
  const out: Record<string, unknown> = edgeFailures(op, own);
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    out[String(status)] = {
      description: list.map((c) => `\`${c}\``).join(', '),
      headers: responseHeaders(audience, status, op),
      content: { 'application/json': { schema: failureOf(list) } },
    };
  }
  return Object.fromEntries(Object.entries(out).sort((a, b) => Number(a[0]) - Number(b[0])));
}

function parametersOf(op: Operation, schemas: SchemaCollector): unknown[] {
  const params: unknown[] = [];
  for (const [where, schema] of [
    ['path', op.params],
    ['query', op.query],
  ] as const) {
    if (!schema) continue;
    const json = schemas.schemaOf(schema, 'input');
    const required = Array.isArray(json.required) ? json.required : [];
    for (const [name, prop] of Object.entries(isRecord(json.properties) ? json.properties : {})) {
      params.push({ name, in: where, required: where === 'path' || required.includes(name), schema: prop });
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

const integerHeader = (description: string) => ({ description, schema: { type: 'integer', minimum: 0 } });

const headerComponents: Record<string, unknown> = {
  XRequestId: {
    description: 'The request id: the `X-Request-Id` the client sent when it is valid, otherwise a generated UUID.',
    schema: { type: 'string' },
  },
  RetryAfter: integerHeader('Seconds to wait before trying again.'),
  IdempotentReplayed: {
    description: '`true` when this is the stored response of an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', enum: ['true'] },
  },
  XRateLimitLimit: integerHeader('Requests the app may make per window.'),
  XRateLimitRemaining: integerHeader('Requests the app has left in the current window.'),
  XRateLimitReset: integerHeader('Seconds until the current window ends.'),
  RateLimitPolicy: {
    description: 'The app\'s quota policy (IETF RateLimit header fields), e.g. `"default";q=100;w=60`.',
    schema: { type: 'string' },
  },
  RateLimit: {
    description: 'The app\'s remaining quota (IETF RateLimit header fields), e.g. `"default";r=99;t=60`.',
    schema: { type: 'string' },
  },
};

function failureSchema(): JsonSchema {
  return {
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
  };
}

/** What each tag of the contract table groups, for the reference's sections. */
const tagDescriptions: Record<string, string> = {
  'Member authentication':
    'Members sign up and sign in with one-time codes mailed to them; member tokens; the redemption PIN.',
  Cashback: 'Cashback cards: earn a percentage of purchases, redeem and refund it.',
  Points: 'Points cards: earn points for purchases, redeem them for rewards, refund them.',
  'Reward claims': 'Members claim rewards with a mailed code; staff approve (points are deducted) or reject.',
  Referrals: "Referral codes, their application and the programme's statistics.",
  'Provisioning (operator)': 'Tenants, apps and their keys, cards and rewards, for the platform operator.',
  'Staff sign-in': 'Staff users sign in with a one-time code mailed to them and get a staff token (12 hours).',
  'Staff: claims': 'The claims queue: approve or reject reward claims.',
  'Staff: members': 'Find members and see their balances, history and referrals.',
  'Staff: adjustments': 'Managers add or deduct points or cashback with a reason.',
  'Staff: referrals': "The referral programme's statistics and top referrers.",
  'Staff: team': "Managers invite, change and deactivate the tenant's staff users.",
  'Staff: audit': "The tenant's tamper-evident audit log and its verification.",
  Webhooks:
    "Endpoints that receive the tenant's events as signed HTTP POSTs (see the `webhooks` section for every event type), and the log of their deliveries.",
  'Webhooks (operator)': "Any tenant's webhook endpoints and deliveries, for the platform operator.",
  'Webhook events': 'What the platform POSTs to webhook endpoints: one entry per event type.',
};

/**
 * The OpenAPI 3.1 `webhooks` object: what the platform POSTs to an endpoint for each event type,
 * with the signature headers and what the receiver answers.
 */
function webhooksSection(schemas: SchemaCollector): Record<string, unknown> {
  const header = (name: string, description: string, example: string) => ({
    name,
    in: 'header',
    required: true,
    description,
    schema: { type: 'string' },
    example,
  });
  const parameters = [
    header(
      WEBHOOK_HEADERS.signature,
      '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" under the endpoint secret>`; during a secret rotation a second `v1` (the old secret). Check one `v1` with a timestamp tolerance (the SDK: `verifyWebhookSignature`).',
      't=1773480413,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd',
    ),
    header(
      WEBHOOK_HEADERS.eventId,
      'The event id (as `id` in the body): the same on every attempt.',
      'b3c1f0d2-9a4e-4e0b-8f57-2f3c9d1e7a10',
    ),
    header(WEBHOOK_HEADERS.eventType, 'The event type (as `type` in the body).', 'points.earned'),
  ];
  const out: Record<string, unknown> = {};
  for (const type of webhookEventNames) {
    out[type] = {
      post: {
        operationId: `webhook.${type}`,
        summary: webhookEventTypes[type].summary,
        description:
          'Delivered at least once: answer 2xx within 10 s, or the delivery is retried with exponential backoff and jitter for up to three days. De-duplicate on the event `id`.',
        tags: ['Webhook events'],
        security: [{ WebhookSignature: [] }],
        parameters,
        requestBody: {
          required: true,
          content: { 'application/json': { schema: schemas.schemaOf(webhookEnvelopeSchema(type), 'output') } },
        },
        responses: {
          '200': { description: 'Received (any 2xx). The body is not read beyond a few KB.' },
          '400': { description: 'Any other answer (or none within 10 s) fails the attempt; it is retried.' },
        },
      },
    };
  }
  return out;
}

/** The platform is not published under an open licence (package.json: private). */
const license = { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' };

function securityOf(op: Operation, audience: Audience): Record<string, string[]>[] {
  if (audience === 'operator') return [{ OperatorToken: [] }];
  if (audience === 'staff') return op.staffRole ? [{ StaffToken: [] }] : [];
  if (op.memberToken === 'optional')
    return [
      { AppId: [], ApiKey: [], MemberToken: [] },
      { AppId: [], ApiKey: [] },
    ];
  return [op.memberToken ? { AppId: [], ApiKey: [], MemberToken: [] } : { AppId: [], ApiKey: [] }];
}

function descriptionOf(op: Operation, audience: Audience): string {
  let who: string;
  if (audience === 'operator') who = 'Requires `Authorization: Bearer <operator token>`.';
  else if (audience === 'staff')
    who = op.staffRole
      ? `Requires \`Authorization: Bearer <staff token>\`; role: \`${op.staffRole}\`${op.staffRole === 'staff' ? ' or `manager`' : ''}.`
      : 'No token: this signs a staff user in.';
  else who = op.scope ? `Scope: \`${op.scope}\`.` : 'No scope required.';
  const token =
    op.memberToken === 'optional'
      ? 'Accepts `X-Member-Token` (see the body for what it needs without one).'
      : op.memberToken
        ? 'Requires `X-Member-Token`.'
        : '';
  return [who, token].filter(Boolean).join(' ');
}

function requestBodyOf(op: Operation, schemas: SchemaCollector): Record<string, unknown> {
  if (op.upload)
    return {
      requestBody: {
        required: true,
        description: `The file, streamed (at most ${op.upload.maxBytes} bytes)`,
        content: Object.fromEntries(op.upload.contentTypes.map((t) => [t, { schema: { type: 'string' } }])),
      },
    };
  if (!op.body) return {};
  const example = op.example?.request !== undefined ? { example: op.example.request } : {};
  return {
    requestBody: {
      required: true,
      content: { 'application/json': { schema: schemas.schemaOf(op.body, 'input'), ...example } },
    },
  };
}

/** The status of an operation's success: 202 when it queues a job, else 200. */
export const successStatus = (op: Pick<Operation, 'accepted'>): 200 | 202 => (op.accepted ? 202 : 200);

function successResponse(op: Operation, audience: Audience, schemas: SchemaCollector): Record<string, unknown> {
  if (op.pagedDownload)
    return {
      description:
        'The file, streamed as it is read (chunked, no Content-Length; `Content-Disposition: attachment` names it). A failure after the first bytes ends the body without its last chunk, so a client sees an incomplete transfer, never a short file that looks whole',
      headers: {
        ...responseHeaders(audience, 200, op),
        'Content-Disposition': { schema: { type: 'string' }, description: 'attachment; filename="..."' },
      },
      content: Object.fromEntries(
        op.pagedDownload.contentTypes.map((t) => [
          t,
          {
            schema: { type: 'string' },
            ...(op.example ? { example: op.example.byContentType?.[t] ?? op.example.response } : {}),
          },
        ]),
      ),
    };
  if (op.download)
    return {
      description: 'The stored bytes, with the content type they were stored with (JSON, JSON Lines, CSV)',
      headers: responseHeaders(audience, 200, op),
      content: {
        '*/*': {
          schema: { type: 'string', contentMediaType: 'application/octet-stream' },
          ...(op.example ? { example: op.example.response } : {}),
        },
      },
    };
  const schema: JsonSchema = {
    type: 'object',
    required: ['success', 'data'],
    properties: {
      success: { const: true },
      data: schemas.schemaOf(op.response, 'output'),
      ...(op.topLevelMessage ? { message: { type: 'string' } } : {}),
    },
  };
  const example = op.example
    ? {
        example: {
          success: true,
          data: op.example.response,
          ...(op.example.message !== undefined ? { message: op.example.message } : {}),
        },
      }
    : {};
  return {
    description: op.accepted
      ? 'Accepted: the work is queued as a job (follow it at `GET /api/v1/jobs/{job_id}`)'
      : 'Success',
    headers: responseHeaders(audience, successStatus(op), op),
    content: { 'application/json': { schema, ...example } },
  };
}

function operationObject(id: string, op: Operation, audience: Audience, schemas: SchemaCollector) {
  return {
    operationId: id,
    summary: op.summary,
    tags: [op.tag],
    description: descriptionOf(op, audience),
    security: securityOf(op, audience),
    parameters: parametersOf(op, schemas),
    ...requestBodyOf(op, schemas),
    responses: {
      [String(successStatus(op))]: successResponse(op, audience, schemas),
      ...failureResponses(op, audience),
    },
  };
}

function securitySchemesOf(audience: Audience): Record<string, unknown> {
  if (audience === 'staff')
    return {
      StaffToken: {
        type: 'http',
        scheme: 'bearer',
        description: 'A staff token from `POST /staff/v1/auth/verify-code` (valid 12 hours).',
      },
    };
  if (audience === 'operator')
    return {
      OperatorToken: {
        type: 'http',
        scheme: 'bearer',
        description: 'The operator token (`OPERATOR_TOKEN` of the gateway).',
      },
    };
  return {
    AppId: { type: 'apiKey', in: 'header', name: 'X-App-Id' },
    ApiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
    MemberToken: { type: 'apiKey', in: 'header', name: 'X-Member-Token' },
    // How a receiver knows a webhook (the `webhooks` section) comes from the platform.
    WebhookSignature: {
      type: 'apiKey',
      in: 'header',
      name: WEBHOOK_HEADERS.signature,
      description:
        'Sent by the platform with every webhook: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" under the endpoint secret>`, and a second `v1` (the old secret) for 24 hours after a rotation. Accept a request when one `v1` matches and `t` is within a tolerance of now (5 minutes); the SDK does both (`verifyWebhookSignature`).',
    },
  };
}

const infos: Record<Audience, { title: string; description: string }> = {
  staff: {
    title: 'Loyalty platform staff API',
    description:
      "The staff console's API: staff users of a tenant sign in with a mailed code and handle claims, look up members, adjust balances (managers), manage staff (managers) and read the audit log (managers). Failures use `{ success: false, error: { code, message, ... } }`.",
  },
  operator: {
    title: 'Loyalty platform operator API',
    description:
      'Provisioning of tenants, apps and card programmes, for the platform operator. Every call sends `Authorization: Bearer <operator token>`. Failures use `{ success: false, error: { code, message, ... } }`.',
  },
  merchant: {
    title: 'Loyalty platform API',
    description:
      'Membership with one-time codes, cashback, points, reward claims and referrals. Every call sends `X-App-Id` and `X-Api-Key`. Failures use `{ success: false, error: { code, message, ... } }`.',
  },
};

function build(ops: Record<string, Operation>, serverUrl: string, audience: Audience): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const schemas = new SchemaCollector();
  for (const [id, op] of Object.entries(ops)) {
    const path = op.path.replace(/:([a-z_]+)/g, '{$1}');
    paths[path] ??= {};
    paths[path][op.method.toLowerCase()] = operationObject(id, op, audience, schemas);
  }
  const { title } = infos[audience];
  const description = `${infos[audience].description} Answers of the HTTP edge itself are shared responses (\`components.responses\`): \`route_not_found\` (404, no route has the path), \`method_not_allowed\` (405, with \`Allow\`), \`uri_too_long\` (414) and \`headers_too_large\` (431).`;
  return {
    openapi: '3.1.0',
    info: { title, version: '1.0.0', license, description },
    servers: [{ url: serverUrl }],
    tags: [
      ...new Set([...Object.values(ops).map((op) => op.tag), ...(audience === 'merchant' ? ['Webhook events'] : [])]),
    ].map((name) => ({
      name,
      description: tagDescriptions[name] ?? name,
    })),
    paths,
    ...(audience === 'merchant' ? { webhooks: webhooksSection(schemas) } : {}),
    components: {
      securitySchemes: securitySchemesOf(audience),
      // Only the headers this document's responses use (the operator API has no per-app limits).
      headers: Object.fromEntries(
        Object.entries(headerComponents).filter(([name]) =>
          JSON.stringify(paths).includes(`"#/components/headers/${name}"`),
        ),
      ),
      responses: edgeResponseComponents(),
      schemas: schemas.schemas,
    },
  };
}

/** OpenAPI 3.1 document of the merchant API (`/api/v1`), generated from the contract table. */
export function buildOpenApiDocument(ops: Record<string, Operation>, serverUrl = '/'): Record<string, unknown> {
  return build(ops, serverUrl, 'merchant');
}

/** OpenAPI 3.1 document of the staff API (`/staff/v1`, bearer staff token), generated from its table. */
export function buildStaffOpenApiDocument(ops: Record<string, Operation>, serverUrl = '/'): Record<string, unknown> {
  return build(ops, serverUrl, 'staff');
}

/** OpenAPI 3.1 document of the operator API (`/admin/v1`, bearer operator token), generated from its table. */
export function buildOperatorOpenApiDocument(ops: Record<string, Operation>, serverUrl = '/'): Record<string, unknown> {
  return build(ops, serverUrl, 'operator');
}
