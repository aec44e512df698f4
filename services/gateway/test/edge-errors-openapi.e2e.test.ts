import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeResponses } from '@loyalty/contracts';
import { readGatewayConfig, startGateway, type RunningGateway } from '@loyalty/gateway';
import { localNats, natsUserEnv } from '../../../test/support/nats.ts';
import { OPERATOR_TOKEN, REDIS_URL } from '../../../test/support/system.ts';
import { checkResponse, resolveResponse } from '../../../test/support/contract.ts';

/**
 * The answers of the HTTP edge itself (no route, another method, a path parameter too long,
 * headers too large) are documented as shared responses in each served OpenAPI document, and what
 * the running gateway answers matches them: the envelope's code and status, and `Allow` on 405.
 * They come before any operation runs, so the gateway alone answers them (no service, no credentials).
 */
type Json = Record<string, unknown>;
interface Doc {
  paths: Record<string, Record<string, { responses: Record<string, { $ref?: string }> }>>;
  components: { responses?: Record<string, { content: { 'application/json': { schema: Json } }; headers?: Json }> };
}

let gateway: RunningGateway;
const docs: Record<string, Doc> = {};
const documents = { merchant: '/openapi.json', operator: '/admin/openapi.json', staff: '/staff/openapi.json' };

beforeAll(async () => {
  const root = `e${randomBytes(5).toString('hex')}`;
  gateway = await startGateway(
    readGatewayConfig({
      ...natsUserEnv('gateway', localNats().url),
      SUBJECT_ROOT: root,
      REDIS_URL,
      REDIS_KEY_PREFIX: `${root}:`,
      OPERATOR_TOKEN,
      PORT: '0',
      HOST: '127.0.0.1',
      OPS_PORT: '0',
      OPS_HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
    }),
  );
  for (const [name, url] of Object.entries(documents))
    docs[name] = (await (await fetch(`${gateway.url}${url}`)).json()) as Doc;
}, 60_000);
afterAll(async () => gateway?.stop());

const ajv = new Ajv2020({ strict: false, allErrors: true });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Asserts that `body` is what `doc`'s shared response `name` describes. */
function expectShared(doc: Doc, name: keyof typeof edgeResponses, body: unknown): void {
  const shared = doc.components.responses?.[name];
  expect(shared, name).toBeDefined();
  const validate = ajv.compile({ ...shared!.content['application/json'].schema, components: doc.components });
  expect(validate(body), `${name}: ${JSON.stringify(validate.errors)} in ${JSON.stringify(body)}`).toBe(true);
}

/** Asserts that `body` is what `doc` says the operation `method path` (a documented path) answers with `status`. */
function expectOperationAnswer(doc: Doc, method: string, path: string, status: number, body: unknown): void {
  const documented = doc.paths[path]?.[method.toLowerCase()]?.responses[String(status)];
  const response = resolveResponse(doc as unknown as Json, documented) as
    { content?: { 'application/json'?: { schema: Json } } } | undefined;
  const schema = response?.content?.['application/json']?.schema;
  expect(schema, `${method} ${path} ${status}`).toBeDefined();
  const validate = ajv.compile({ ...schema, components: doc.components });
  expect(validate(body), `${method} ${path} ${status}: ${JSON.stringify(validate.errors)}`).toBe(true);
}

/** One raw HTTP/1.1 request (headers the fetch API would refuse to send); status line, headers (lower-cased names) and body. */
function rawRequest(text: string): Promise<{ status: number; headers: Record<string, string>; body: unknown }> {
  const { port } = new URL(gateway.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let data = '';
    socket.on('data', (d) => (data += d.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = data.split('\r\n\r\n');
      const headers = Object.fromEntries(
        head
          .split('\r\n')
          .slice(1)
          .map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      resolve({ status: Number(head.split(' ')[1]), headers, body: JSON.parse(body) });
    });
    socket.write(text);
  });
}

describe('edge answers in the OpenAPI documents', () => {
  it.each(Object.keys(documents))('the %s document has the four shared responses', (name) => {
    const doc = docs[name]!;
    expect(Object.keys(doc.components.responses ?? {}).sort()).toEqual(
      ['HeadersTooLarge', 'MethodNotAllowed', 'RouteNotFound', 'UriTooLong'].sort(),
    );
    expect(doc.components.responses!.MethodNotAllowed!.headers).toHaveProperty('Allow');
    // Every operation names 431, 404 (shared or merged into its own) and 405; those with path parameters 414.
    for (const [path, methods] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(methods)) {
        const where = `${method} ${path}`;
        expect(op.responses['431'], where).toEqual({ $ref: '#/components/responses/HeadersTooLarge' });
        expect(op.responses['405'], where).toEqual({ $ref: '#/components/responses/MethodNotAllowed' });
        expect(JSON.stringify(op.responses['404']), where).toMatch(/RouteNotFound|route_not_found/);
        if (path.includes('{'))
          expect(op.responses['414'], where).toEqual({ $ref: '#/components/responses/UriTooLong' });
        else expect(op.responses['414'], where).toBeUndefined();
      }
  });

  it('a path parameter over the limit: 414 as documented, on each API', async () => {
    for (const [name, method, path] of [
      ['merchant', 'GET', `/api/v1/loyalty/claims/${'1'.repeat(150)}`],
      ['operator', 'POST', `/admin/v1/apps/${'a'.repeat(120)}/revoke`],
      ['staff', 'GET', `/staff/v1/members/${'7'.repeat(120)}`],
    ] as const) {
      const res = await fetch(`${gateway.url}${path}`, { method });
      const body = await res.json();
      expect(res.status, path).toBe(414);
      expect(res.headers.get('x-request-id'), path).toMatch(UUID);
      expectShared(docs[name]!, 'UriTooLong', body);
      // The operation's own entry for 414 (the contract check the e2e tests apply to every answer).
      expect(() => checkResponse(method, path, 414, body)).not.toThrow();
      const documented = path
        .replace(/\/claims\/1+$/, '/claims/{request_id}')
        .replace(/\/apps\/a+\//, '/apps/{app_id}/')
        .replace(/\/members\/7+$/, '/members/{member_id}');
      expectOperationAnswer(docs[name]!, method, documented, 414, body);
    }
  });

  it('an unknown path: 404 route_not_found as documented, on each API', async () => {
    for (const [name, path] of [
      ['merchant', '/api/v1/loyalty/nowhere'],
      ['operator', '/admin/v1/nowhere'],
      ['staff', '/staff/v1/nowhere'],
    ] as const) {
      const res = await fetch(`${gateway.url}${path}`);
      expect(res.status, path).toBe(404);
      const body = await res.json();
      expectShared(docs[name]!, 'RouteNotFound', body);
      // What an operation's client gets from a server without that operation.
      const operation = {
        merchant: '/api/v1/loyalty/points/balance',
        operator: '/admin/v1/tenants',
        staff: '/staff/v1/me',
      }[name];
      expectOperationAnswer(docs[name]!, 'GET', operation, 404, body);
    }
  });

  it('another method on a route: 405 with Allow as documented, on each API', async () => {
    for (const [name, method, path, allow] of [
      ['merchant', 'DELETE', '/api/v1/loyalty/points/earn', 'POST'],
      ['operator', 'PUT', '/admin/v1/tenants', 'GET, POST'],
      ['staff', 'DELETE', '/staff/v1/audit/verify', 'GET'],
    ] as const) {
      const res = await fetch(`${gateway.url}${path}`, { method });
      expect(res.status, path).toBe(405);
      expect(res.headers.get('allow')?.split(', ').sort(), path).toEqual(allow.split(', ').sort());
      const body = await res.json();
      expectShared(docs[name]!, 'MethodNotAllowed', body);
      expectOperationAnswer(docs[name]!, allow.split(', ')[0]!, path, 405, body);
    }
  });

  it('headers over the limit: 431 as documented (answered by the HTTP parser)', async () => {
    const r = await rawRequest(
      `GET /api/v1/loyalty/points/balance HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\nConnection: close\r\n\r\n`,
    );
    expect(r.status).toBe(431);
    expect(r.headers['x-request-id']).toMatch(UUID);
    for (const doc of Object.values(docs)) expectShared(doc, 'HeadersTooLarge', r.body);
    expectOperationAnswer(docs.merchant!, 'GET', '/api/v1/loyalty/points/balance', 431, r.body);
  });
});

describe('requests the HTTP parser refuses', () => {
  it.each([
    ['Content-Length: -1'],
    ['Content-Length: abc'],
    ['Content-Length: 2\r\nTransfer-Encoding: chunked'],
    ['Content-Length: 2\r\nContent-Length: 3'],
  ])('%j: 400 malformed_request with an X-Request-Id of its own', async (framing) => {
    const ids = new Set<string>();
    for (let i = 0; i < 2; i++) {
      const r = await rawRequest(
        `POST /api/v1/loyalty/points/earn HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
          `X-Request-Id: client-chosen-id\r\n${framing}\r\nConnection: close\r\n\r\n{}`,
      );
      expect(r.status).toBe(400);
      expect(r.body).toEqual({
        success: false,
        error: { code: 'malformed_request', message: 'The HTTP request is malformed.' },
      });
      expect(r.headers['cache-control']).toBe('no-store');
      expect(r.headers['x-request-id']).toMatch(UUID);
      ids.add(r.headers['x-request-id']!);
    }
    expect(ids.size, 'a fresh id each time').toBe(2);
  });
});

describe('bodies that are not JSON', () => {
  it.each(['text/plain', 'text/plain; charset=utf-8', 'application/xml', 'application/x-www-form-urlencoded'])(
    'a JSON route given %s: 415 unsupported_media_type as documented, on each API',
    async (type) => {
      for (const [name, method, path, url, auth] of [
        ['merchant', 'POST', '/api/v1/loyalty/points/earn', '/api/v1/loyalty/points/earn', {}],
        ['merchant', 'POST', '/api/v1/loyalty/cards/{card_id}/rules', '/api/v1/loyalty/cards/2/rules', {}],
        ['merchant', 'PATCH', '/api/v1/loyalty/cards/{card_id}/rules/{rule_id}', '/api/v1/loyalty/cards/2/rules/1', {}],
        ['merchant', 'PUT', '/api/v1/loyalty/cards/{card_id}/tiers', '/api/v1/loyalty/cards/2/tiers', {}],
        ['staff', 'POST', '/staff/v1/auth/request-code', '/staff/v1/auth/request-code', {}],
        ['operator', 'POST', '/admin/v1/tenants', '/admin/v1/tenants', { authorization: `Bearer ${OPERATOR_TOKEN}` }],
      ] as const) {
        const res = await fetch(`${gateway.url}${url}`, {
          method,
          headers: { 'content-type': type, ...auth },
          body: '{"name":"ct"}',
        });
        const body = (await res.json()) as { success: boolean; error: { code: string } };
        expect([res.status, body.error?.code], `${method} ${url}`).toEqual([415, 'unsupported_media_type']);
        expect(res.headers.get('x-request-id'), `${method} ${url}`).toMatch(UUID);
        expectOperationAnswer(docs[name]!, method, path, 415, body);
      }
    },
  );

  it('the one-click unsubscribe still reads a text/plain body (RFC 8058): the token decides', async () => {
    const res = await fetch(`${gateway.url}/api/v1/unsubscribe?token=not-a-token`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'List-Unsubscribe=One-Click',
    });
    const body = (await res.json()) as { error: { code: string } };
    expect(body.error.code).toBe('invalid_unsubscribe_token');
  });
});

describe('a body declared over the limit', () => {
  /** The answer to `text` as soon as it has arrived whole (its Content-Length), and how long it took. */
  function firstAnswer(text: string): Promise<{ ms: number; status: number; body: unknown; socket: net.Socket }> {
    const { port } = new URL(gateway.url);
    const started = Date.now();
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1');
      let data = '';
      socket.on('error', reject);
      socket.on('data', (d) => {
        data += d.toString();
        const end = data.indexOf('\r\n\r\n');
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(data.slice(0, end))?.[1] ?? NaN);
        if (end < 0 || data.length < end + 4 + length) return;
        const status = Number(data.split(' ')[1]);
        resolve({ ms: Date.now() - started, status, body: JSON.parse(data.slice(end + 4)), socket });
      });
      socket.write(text);
    });
  }

  it.each(['/api/v1/loyalty/points/earn', '/api/v1/loyalty/cards/2/rules', '/staff/v1/auth/request-code'])(
    '%s: 413 payload_too_large at once, not after waiting for the body',
    async (path) => {
      const r = await firstAnswer(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n{}`,
      );
      r.socket.destroy();
      expect(r.status).toBe(413);
      expect(r.body).toMatchObject({ success: false, error: { code: 'payload_too_large' } });
      expect(r.ms).toBeLessThan(2_000);
      expectOperationAnswer(
        docs[path.startsWith('/staff') ? 'staff' : 'merchant']!,
        'POST',
        path.replace('/2/', '/{card_id}/'),
        413,
        r.body,
      );
    },
  );

  it('the connection goes on once the declared body has been read after the answer', async () => {
    const limit = 64 * 1024;
    const { port } = new URL(gateway.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    let data = '';
    socket.on('data', (d) => (data += d.toString()));
    socket.write(
      `POST /api/v1/loyalty/points/earn HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${2 * limit}\r\n\r\n`,
    );
    await expect.poll(() => data, { timeout: 2_000 }).toContain('payload_too_large');
    socket.write('x'.repeat(2 * limit));
    socket.write('GET /api/v1/nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await new Promise((resolve) => socket.on('close', resolve));
    expect(data).toContain('route_not_found');
  });
});
