import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { operations, Scope, operatorOperations, staffApiOperations, type Operation } from '@loyalty/contracts';
import { cashbackCard, pointsCard, reward, signedIn } from '../support/ledger.ts';
import { signIn } from '../support/staff.ts';
import { apiClient, OPERATOR_TOKEN, staffClient, startTestSystem, type TestSystem } from '../support/system.ts';
import { unwrap } from '../support/zod-schema.ts';

/**
 * No input answers 5xx: every operation of the contract tables (merchant, operator, staff) gets hostile values in each of
 * its string, id and amount fields (NUL, lone surrogates, coercible non-integers, sub-cent and
 * out-of-range amounts, unbounded metadata, deep nesting) and answers a 4xx failure envelope,
 * with nothing written. Plus what Node and Fastify refuse before a route runs (bad headers, huge
 * headers, long paths, huge bodies), which must answer in the envelope too.
 */
let sys: TestSystem;
let creds: { tenantId: number; appId: string; apiKey: string };
let cashback: number;
let points: number;
let rewardId: number;
let member: { id: number; email: string; token: string };
/** A manager's staff token: the staff API's operations are reached with it. */
let staffToken: string;

const TABLES = [
  'ledger.journal',
  'ledger.accounts',
  'ledger.cards',
  'ledger.rewards',
  'claims.claim_requests',
  'identity.members',
  'identity.tenants',
  'identity.apps',
  'identity.otps',
  'identity.staff_users',
  'identity.staff_sessions',
  'referrals.referrals',
  'referrals.referral_codes',
  'webhooks.endpoints',
  'webhooks.events',
  'webhooks.deliveries',
];

beforeAll(async () => {
  // A loaded machine (tests of several checkouts at once) can take more than the default 1.5 s to answer.
  sys = await startTestSystem({
    services: ['identity', 'ledger', 'claims', 'referrals', 'webhooks'],
    // Thousands of hostile requests from one address: the per-address limits of the operator and
    // staff APIs are not what this file tests.
    env: { REQUEST_TIMEOUT_MS: '10000', OPERATOR_RATE_LIMIT_MAX: '100000', STAFF_RATE_LIMIT_MAX: '100000' },
  });
  // Every scope, so that every operation reaches its validation.
  creds = await sys.tenant({ scopes: [...Scope.options] });
  cashback = await cashbackCard(sys, creds.tenantId);
  points = await pointsCard(sys, creds.tenantId);
  rewardId = await reward(sys, creds.tenantId, points, 10);
  const api = apiClient(sys.url, creds);
  member = await signedIn(api);
  await sys.admin('POST', `/admin/v1/tenants/${creds.tenantId}/staff`, { email: 'boss@example.com', role: 'manager' });
  staffToken = await signIn(staffClient(sys.url), creds.tenantId, 'boss@example.com');
  for (const [path, card] of [
    ['/api/v1/loyalty/points/earn', points],
    ['/api/v1/cashback/cashback/earn', cashback],
  ] as const) {
    const r = await api('POST', path, { body: { card_id: card, member_id: member.id, purchase_amount: 100 } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  }
}, 120_000);
afterAll(async () => sys?.stop());

async function rowCounts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of TABLES) out[t] = Number((await sys.db.query(`SELECT count(*) AS n FROM ${t}`)).rows[0].n);
  return out;
}

// ---- the fields of an operation, from its zod schemas -------------------------------------------

type Kind = 'string' | 'number' | 'id-param' | 'metadata' | 'object' | 'other';
interface Field {
  /** Dotted path in the body (nested objects such as cashback_config). */
  path: string[];
  kind: Kind;
  required: boolean;
  schema: z.ZodType;
}

function kindOf(s: z.ZodType): Kind {
  const type = unwrap(s)._zod.def.type;
  if (type === 'string' || type === 'enum') return 'string';
  if (type === 'number') return 'number';
  if (type === 'union') return 'id-param';
  if (type === 'record') return 'metadata';
  if (type === 'object') return 'object';
  return 'other';
}

function fieldsOf(schema: z.ZodType | undefined, prefix: string[] = []): Field[] {
  if (!schema) return [];
  const shape = (unwrap(schema) as z.ZodObject).shape;
  const out: Field[] = [];
  for (const [name, s] of Object.entries(shape ?? {})) {
    const kind = kindOf(s);
    const required = !s.safeParse(undefined).success;
    out.push({ path: [...prefix, name], kind, required, schema: s });
    if (kind === 'object') out.push(...fieldsOf(s, [...prefix, name]));
  }
  return out;
}

/** A valid value for a field, by name (the operation's cards, reward, member), else by type. */
function validValue(op: Operation, f: Field): unknown {
  const name = f.path[f.path.length - 1]!;
  const byName: Record<string, unknown> = {
    card_id: op.tag === 'Cashback' ? cashback : points,
    member_id: member.id,
    referee_member_id: member.id,
    reward_id: rewardId,
    tenant_id: creds.tenantId,
    request_id: 999_999,
    app_id: 'app_not_a_real_one',
    email: member.email,
    member_email: member.email,
    phone: '+15550001111',
    purchase_amount: 10,
    refund_amount: 10,
    amount: 1,
    code: '123456',
    verification_code: '123456',
    pin: '1234',
    referral_code: 'NOSUCHCODE',
    reward_system: 'points',
    points_ratio: 1,
    points_cost: 10,
    cashback_percentage: 5,
    claim_lifetime_hours: 72,
    endpoint_id: 999_999,
    delivery_id: 999_999,
    url: 'http://127.0.0.1:9/hook',
    event_types: ['*'],
    contact_email: 'it@example.com',
  };
  if (name in byName) return byName[name];
  const base = unwrap(f.schema)._zod.def as { type: string; entries?: Record<string, string> };
  if (base.type === 'enum') return Object.values(base.entries ?? {})[0];
  if (f.kind === 'string') return 'Valid Name';
  if (f.kind === 'number') return 1;
  if (f.kind === 'object') return {};
  if (base.type === 'boolean') return false;
  return undefined;
}

/** The operation's required body fields with valid values (a base for one hostile field). */
function baseBody(op: Operation, fields: Field[]): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const f of fields) if (f.required && f.path.length === 1) body[f.path[0]!] = validValue(op, f);
  if (op.operation === 'admin.card.create') body.points_ratio = 1;
  return body;
}

function withValue(body: Record<string, unknown>, path: string[], value: unknown): Record<string, unknown> {
  const copy = structuredClone(body);
  let at = copy;
  for (const key of path.slice(0, -1)) {
    at[key] = typeof at[key] === 'object' && at[key] !== null ? at[key] : {};
    at = at[key] as Record<string, unknown>;
  }
  at[path[path.length - 1]!] = value;
  return copy;
}

// ---- hostile values -----------------------------------------------------------------------------

const INFINITY = '__INFINITY__';
const hostileStrings: unknown[] = ['\u0000', 'a\u0000b', '\uD800', 'x\uDC00y'];
const hostileIds: unknown[] = [[7], '7', true, 7.5, 0, -1, 2 ** 53, 1e300, '1e3', INFINITY];
const hostileAmounts: unknown[] = [1e-9, 5e-324, -1, 1_000_000_000.01, 1e300, '10', [10], true, INFINITY];
const hostileMetadata: unknown[] = [
  { 'a\u0000': 1 },
  { a: 'b\u0000' },
  { a: '\uD800' },
  { ['\uDC00']: 1 },
  { a: { b: { c: { d: { e: { f: 1 } } } } } },
  Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])),
  { a: 'x'.repeat(4100) },
  { ['k'.repeat(65)]: 1 },
  [1, 2],
  'text',
];
const hostileParams = ['%00', 'a%00', '1e3', '0x10', '%207', '+7', '7.0', '-1', '9007199254740993', '%ED%A0%80'];

function hostileFor(f: Field): unknown[] {
  const name = f.path[f.path.length - 1]!;
  if (f.kind === 'string') return hostileStrings;
  if (f.kind === 'metadata') return hostileMetadata;
  if (f.kind === 'number') return name.endsWith('_id') ? hostileIds : hostileAmounts;
  return [];
}

const bodyText = (body: unknown) => JSON.stringify(body).replaceAll(`"${INFINITY}"`, '1e309');

type Result = { status: number; text: string; json?: { success?: boolean; error?: Record<string, unknown> } };

async function send(op: Operation, path: string, opts: { body?: string; query?: string } = {}): Promise<Result> {
  const operator = path.startsWith('/admin/');
  const headers: Record<string, string> = operator
    ? { authorization: `Bearer ${OPERATOR_TOKEN}` }
    : path.startsWith('/staff/')
      ? { authorization: `Bearer ${staffToken}` }
      : { 'x-app-id': creds.appId, 'x-api-key': creds.apiKey };
  if (op.memberToken) headers['x-member-token'] = member.token;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${sys.url}${path}${opts.query ? `?${opts.query}` : ''}`, {
    method: op.method,
    headers,
    body: opts.body,
  });
  const text = await res.text();
  let json: Result['json'];
  try {
    json = JSON.parse(text) as Result['json'];
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

/** The path of an operation with valid path parameters, one of them optionally replaced (raw). */
function pathOf(op: Operation, fields: Field[], replace?: { name: string; raw: string }): string {
  return op.path.replace(/:([a-z_]+)/g, (_, name: string) => {
    if (replace?.name === name) return replace.raw;
    const f = fields.find((x) => x.path[0] === name)!;
    return encodeURIComponent(String(validValue(op, f)));
  });
}

function queryOf(op: Operation, fields: Field[], replace?: { name: string; raw: string }): string {
  const parts: string[] = [];
  for (const f of fields) {
    const name = f.path[0]!;
    if (replace?.name === name) parts.push(`${name}=${replace.raw}`);
    else if (f.required) parts.push(`${name}=${encodeURIComponent(String(validValue(op, f)))}`);
  }
  return parts.join('&');
}

/**
 * A refusal of the hostile value: a 4xx failure envelope, `validation_error` naming the field. The
 * operations whose values are judged by their owner (earning rules: 422 `invalid_rule`, tier
 * ladders: 422 `invalid_tiers`, with the fields; the contract's shapes stay loose on purpose) are
 * held to the envelope and the 4xx only: the base body built here is not a valid rule or ladder,
 * and their field-by-field answers are checked in the ledger's rules and tiers tests.
 */
function expectRefused(r: Result, field: string, label: string, strict = true, op?: Operation): void {
  expect(r.status, label).toBeGreaterThanOrEqual(400);
  expect(r.status, label).toBeLessThan(500);
  expect(r.json, label).toMatchObject({
    success: false,
    error: { code: expect.any(String), message: expect.any(String) },
  });
  if (!strict || op?.errors.includes('invalid_rule') || op?.errors.includes('invalid_tiers')) return;
  expect(r.status, label).toBe(400);
  expect(r.json?.error?.code, label).toBe('validation_error');
  const named = (r.json?.error?.fields as { field: string }[] | undefined)?.map((x) => x.field) ?? [];
  expect(named, label).toContain(field);
}

const allOps = [
  ...Object.values(operations),
  ...Object.values(operatorOperations),
  ...Object.values(staffApiOperations),
];

describe('hostile values in every field of every operation', () => {
  it('answers 4xx in the envelope, names the field and writes nothing', async () => {
    const before = await rowCounts();
    let requests = 0;
    for (const op of allOps) {
      const params = fieldsOf(op.params);
      const query = fieldsOf(op.query);
      const body = fieldsOf(op.body);
      const path = pathOf(op, params);
      const q = queryOf(op, query);
      const base = op.body ? baseBody(op, body) : undefined;
      const label = (where: string, value: unknown) => `${op.method} ${op.path} ${where} = ${JSON.stringify(value)}`;

      for (const f of params) {
        const raws = f.kind === 'string' ? ['%00', 'a%00b', '%ED%A0%80'] : [...hostileParams, '9'.repeat(40)];
        for (const raw of raws) {
          const r = await send(op, pathOf(op, params, { name: f.path[0]!, raw }), {
            body: base && bodyText(base),
            query: q,
          });
          requests += 1;
          // A path that does not decode never reaches a route: any 4xx envelope.
          expectRefused(r, f.path[0]!, label(f.path[0]!, raw), raw !== '%ED%A0%80');
        }
      }
      for (const f of query) {
        if (f.kind !== 'string' && f.kind !== 'id-param') continue;
        const raws = f.kind === 'string' ? ['%00', 'a%00b', '%ED%A0%80'] : [...hostileParams, 'x&' + f.path[0] + '=2'];
        for (const raw of raws) {
          const r = await send(op, path, { query: queryOf(op, query, { name: f.path[0]!, raw }) });
          requests += 1;
          expectRefused(r, f.path[0]!, label(`?${f.path[0]}`, raw), raw !== '%ED%A0%80');
        }
      }
      for (const f of body) {
        for (const value of hostileFor(f)) {
          const r = await send(op, path, { body: bodyText(withValue(base ?? {}, f.path, value)), query: q });
          requests += 1;
          expectRefused(r, f.path.join('.'), label(f.path.join('.'), value), true, op);
        }
      }
    }
    expect(requests).toBeGreaterThan(300);
    expect(await rowCounts()).toEqual(before);
  }, 120_000);

  it('refuses a body nested thousands of levels deep before validation, naming (body)', async () => {
    const deep = `${'{"a":'.repeat(6000)}1${'}'.repeat(6000)}`;
    const inMetadata = `{"card_id":${points},"member_id":${member.id},"purchase_amount":10,"metadata":${deep}}`;
    const arrays = `${'['.repeat(6000)}${']'.repeat(6000)}`;
    const before = await rowCounts();
    // An upload's body is a file (not JSON; a JSON body is 415 there), so it is not walked at all.
    for (const op of allOps.filter((o) => o.method === 'POST' && !o.upload)) {
      for (const text of [deep, inMetadata, arrays]) {
        const params = fieldsOf(op.params);
        const r = await send(op, pathOf(op, params), { body: text });
        expectRefused(r, '(body)', `${op.path} deep body`);
      }
    }
    expect(await rowCounts()).toEqual(before);
  }, 60_000);
});

// ---- what Node and Fastify refuse before a route runs --------------------------------------------

/** Sends raw bytes on a socket and reads the answer until the server closes the connection. */
function rawRequest(text: string): Promise<{ status: number; headers: string; body: string }> {
  const { hostname, port } = new URL(sys.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(text));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const all = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = all.split('\r\n\r\n');
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0),
        headers: head,
        body: rest.join('\r\n\r\n'),
      });
    });
  });
}

const CHECK = '/api/v1/auth/member/check';
const request = (headerLines: string[]) =>
  `POST ${CHECK} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 2\r\n` +
  `${headerLines.map((h) => `${h}\r\n`).join('')}\r\n{}`;

function expectEnvelope(r: { status: number; body: string }, status: number, code: string): void {
  expect(r.status, r.body).toBe(status);
  expect(JSON.parse(r.body)).toEqual({ success: false, error: { code, message: expect.any(String) } });
}

describe('requests refused before routing answer in the envelope', () => {
  it('a bare CR, a bare LF or a NUL in a header value and an obs-fold header: 400 invalid_header', async () => {
    for (const line of ['X-Test: a\rb', 'X-Test: a\u0000b', 'X-Test: a\r\n folded', 'X-App-Id: a\nb']) {
      const r = await rawRequest(request([line]));
      expectEnvelope(r, 400, 'invalid_header');
    }
  });

  it('headers over the size limit: 431 headers_too_large', async () => {
    const r = await rawRequest(request([`X-Big: ${'a'.repeat(40_000)}`]));
    expectEnvelope(r, 431, 'headers_too_large');
  });

  it('a path parameter over the length limit: 414 uri_too_long', async () => {
    const headers = { 'x-app-id': creds.appId, 'x-api-key': creds.apiKey };
    for (const path of [
      `/api/v1/loyalty/claims/${'1'.repeat(150)}`,
      `/api/v1/loyalty/cards/${'7'.repeat(101)}/referral-stats`,
    ]) {
      const res = await fetch(`${sys.url}${path}`, { headers });
      expect(res.status).toBe(414);
      expect(await res.json()).toEqual({
        success: false,
        error: { code: 'uri_too_long', message: expect.any(String) },
      });
    }
    const admin = await fetch(`${sys.url}/admin/v1/apps/${'a'.repeat(120)}/revoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    });
    expect(admin.status).toBe(414);
    expect(await admin.json()).toMatchObject({ success: false, error: { code: 'uri_too_long' } });
  });

  it('a body over the limit: the client reads the 413 envelope (2x and 20x the limit, sized and chunked)', async () => {
    const limit = 64 * 1024;
    for (const factor of [2, 20]) {
      const text = JSON.stringify({ email: 'a@example.com', pad: 'x'.repeat(factor * limit) });
      const sized = await fetch(`${sys.url}${CHECK}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-app-id': creds.appId, 'x-api-key': creds.apiKey },
        body: text,
      });
      expect(sized.status).toBe(413);
      expect(await sized.json()).toEqual({
        success: false,
        error: { code: 'payload_too_large', message: expect.any(String) },
      });
      const bytes = new TextEncoder().encode(text);
      const chunked = await fetch(`${sys.url}${CHECK}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-app-id': creds.appId, 'x-api-key': creds.apiKey },
        body: new ReadableStream({
          start(controller) {
            for (let i = 0; i < bytes.length; i += 16 * 1024) controller.enqueue(bytes.subarray(i, i + 16 * 1024));
            controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
      expect(chunked.status).toBe(413);
      expect(await chunked.json()).toMatchObject({ success: false, error: { code: 'payload_too_large' } });
    }
  });
});

describe('trailing slash and 405', () => {
  it('a trailing slash routes like the path without it', async () => {
    const api = apiClient(sys.url, creds);
    const earn = await api('POST', '/api/v1/loyalty/points/earn/', {
      body: { card_id: points, member_id: member.id, purchase_amount: 1 },
    });
    expect(earn.status, JSON.stringify(earn.body)).toBe(200);
    const cards = await api('GET', '/api/v1/cashback/cards/');
    expect(cards.status).toBe(200);
  });

  it('405 only names other methods; a path that is no route is 404', async () => {
    const api = apiClient(sys.url, creds);
    const wrong = await api('GET', '/api/v1/loyalty/points/earn/');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect(wrong.body.error).toMatchObject({
      code: 'method_not_allowed',
      message: 'GET is not allowed here; use POST.',
    });
    const none = await api('POST', '/api/v1/loyalty/points//earn');
    expect(none.status).toBe(404);
    expect(none.body.error).toMatchObject({ code: 'route_not_found' });
  });
});
