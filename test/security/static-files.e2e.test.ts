import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * The gateway's static files (the staff console at /console/, Swagger UI's at /docs/static/) seen
 * by someone looking for a way out of their directory: a path naming a parent (plain, encoded, with
 * a backslash), a NUL byte or an absolute path answers 404 route_not_found in the envelope, never
 * a file from elsewhere and never a 500; and the pages carry their security headers.
 */
let sys: TestSystem;

beforeAll(async () => {
  sys = await startTestSystem({ services: ['identity'] });
}, 60_000);
afterAll(async () => sys?.stop());

/** A GET with the path exactly as written (fetch would resolve the dots before sending). */
function rawGet(path: string): Promise<{ status: number; headers: string; body: string }> {
  const { hostname, port } = new URL(sys.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () =>
      socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`),
    );
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n', 2);
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), headers: head.toLowerCase(), body });
    });
  });
}

describe('static files', () => {
  it.each([
    '/console/../package.json',
    '/console/%2e%2e/package.json',
    '/console/.%2e/.%2e/package.json',
    '/console/assets/../../package.json',
    '/console/..%5c..%5cpackage.json',
    '/console/%00',
    '/console/index.html%00.js',
    '//console//etc/passwd',
    '/console//etc/passwd',
    '/docs/static/../package.json',
    '/docs/static/%2e%2e/%2e%2e/package.json',
    '/docs/static/%00',
  ])('answers %s with 404 route_not_found, no file from elsewhere', async (path) => {
    const r = await rawGet(path);
    expect(r.status, r.body).toBe(404);
    expect(r.headers).toContain('content-type: application/json');
    expect(JSON.parse(r.body)).toMatchObject({ success: false, error: { code: 'route_not_found' } });
  });

  it('still serves the console and its files', async () => {
    const page = await rawGet('/console/');
    expect(page.status).toBe(200);
    const script = /src="([^"]+\.js)"/.exec(page.body)?.[1];
    expect(script).toBeDefined();
    const asset = await rawGet(new URL(script!, `${sys.url}/console/`).pathname);
    expect(asset.status).toBe(200);
  });
});
