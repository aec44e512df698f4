import Fastify, { type FastifyInstance } from 'fastify';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptsGzip, docs, docsPolicy } from '../src/plugins/docs.ts';

/** The documents are held compressed: both codings served, each with its own strong ETag. */
let app: FastifyInstance;
beforeAll(async () => {
  app = Fastify();
  await app.register(docs, { publicBaseUrl: 'https://loyalty.example' });
});
afterAll(async () => app?.close());

describe('served OpenAPI documents', () => {
  it('sends gzip to a client that takes it and plain JSON to one that does not, the same document', async () => {
    const zipped = await app.inject({
      method: 'GET',
      url: '/openapi.json',
      headers: { 'accept-encoding': 'gzip, br' },
    });
    expect(zipped.statusCode).toBe(200);
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers.vary).toContain('Accept-Encoding');
    const plain = await app.inject({ method: 'GET', url: '/openapi.json', headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(gunzipSync(zipped.rawPayload).toString('utf8')).toBe(plain.body);
    const doc = plain.json<{ openapi: string; servers: { url: string }[] }>();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers[0]?.url).toBe('https://loyalty.example');
    expect(zipped.headers.etag).not.toBe(plain.headers.etag);
    for (const [encoding, etag] of [
      ['gzip', zipped.headers.etag],
      ['identity', plain.headers.etag],
    ]) {
      const again = await app.inject({
        method: 'GET',
        url: '/openapi.json',
        headers: { 'accept-encoding': encoding!, 'if-none-match': String(etag) },
      });
      expect(again.statusCode).toBe(304);
    }
    // The other coding's tag does not match this one.
    const crossed = await app.inject({
      method: 'GET',
      url: '/openapi.json',
      headers: { 'accept-encoding': 'identity', 'if-none-match': String(zipped.headers.etag) },
    });
    expect(crossed.statusCode).toBe(200);
  });

  it('gives Swagger UI its document as JSON and YAML', async () => {
    for (const [prefix, title] of [
      ['/docs', 'Loyalty platform API'],
      ['/admin/docs', 'Loyalty platform operator API'],
      ['/staff/docs', 'Loyalty platform staff API'],
    ]) {
      const json = await app.inject({ method: 'GET', url: `${prefix}/json` });
      expect(json.statusCode).toBe(200);
      expect(json.json<{ info: { title: string } }>().info.title).toBe(title);
      const yaml = await app.inject({ method: 'GET', url: `${prefix}/yaml` });
      expect(yaml.statusCode).toBe(200);
      expect(yaml.body).toContain(`title: ${title}`);
      expect((await app.inject({ method: 'GET', url: `${prefix}/` })).body).toContain('swagger');
    }
  });

  it('serves Swagger UI with a content security policy and no framing, its API origin allowed to be called', async () => {
    for (const url of ['/docs/', '/admin/docs/', '/staff/docs/', '/docs/static/swagger-initializer.js', '/docs/json']) {
      const r = await app.inject({ method: 'GET', url });
      expect(r.statusCode, url).toBe(200);
      const policy = String(r.headers['content-security-policy']);
      expect(policy, url).toContain("script-src 'self';");
      expect(policy).toContain("object-src 'none'");
      expect(policy).toContain("frame-ancestors 'none'");
      expect(policy).toContain("connect-src 'self' https://loyalty.example;");
      expect(r.headers['x-frame-options']).toBe('DENY');
      expect(r.headers['x-content-type-options']).toBe('nosniff');
      expect(r.headers['referrer-policy']).toBe('no-referrer');
    }
    // A relative PUBLIC_BASE_URL (the default, `/`): the page's own origin only.
    expect(docsPolicy('/')).toContain("connect-src 'self';");
  });

  it('reads Accept-Encoding with its qualities', () => {
    expect(acceptsGzip(undefined)).toBe(false);
    expect(acceptsGzip('gzip')).toBe(true);
    expect(acceptsGzip('deflate, GZIP;q=0.5')).toBe(true);
    expect(acceptsGzip('gzip;q=0')).toBe(false);
    expect(acceptsGzip('*')).toBe(true);
    expect(acceptsGzip('br, deflate')).toBe(false);
    expect(acceptsGzip('identity')).toBe(false);
  });
});
