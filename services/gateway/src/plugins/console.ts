import { existsSync } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import fastifyStatic from '@fastify/static';
import { AppError } from '@loyalty/contracts';
import { sendFailure } from '../envelope.ts';
import { staticFileErrors } from './envelope.ts';

export interface ConsoleOptions {
  /** The built console (console/dist: index.html and assets/). */
  dir: string;
}

/**
 * The staff console's static files at /console/ (built from console/src by scripts/build.mjs).
 * Everything it loads is its own (no CDN): the content security policy allows only this origin,
 * no inline script, no framing. The Mail page's preview is a mail's HTML in a sandboxed `srcdoc`
 * frame (no script, an origin of its own), which inherits this policy: a mail's inline styles and
 * its https logo are allowed for it (`style-src 'unsafe-inline'`, `img-src https:`), scripts stay
 * this origin's only. A path the file sender refuses (`..`, a NUL byte) answers 404 like a
 * missing file. Without a build, /console answers 503 saying how to build it.
 */
export const staffConsole: FastifyPluginAsync<ConsoleOptions> = async (app, { dir }) => {
  if (!existsSync(`${dir}/index.html`)) {
    app.get('/console/*', async (_req, reply) =>
      sendFailure(
        reply,
        new AppError('service_unavailable', 'The staff console is not built; run `npm run build` (or npm start).'),
      ),
    );
    return;
  }
  await app.register(async (scope) => {
    // A path out of the directory (`/console/../package.json`) is a 404, not a 500.
    scope.setErrorHandler(staticFileErrors);
    scope.addHook('onSend', async (_req, reply, payload) => {
      reply.header(
        'Content-Security-Policy',
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: https:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
      );
      reply.header('X-Content-Type-Options', 'nosniff');
      reply.header('Referrer-Policy', 'no-referrer');
      reply.header('X-Frame-Options', 'DENY');
      // Revalidated on every load (ETag), so a new build shows at once.
      reply.header('Cache-Control', 'no-cache');
      return payload;
    });
    await scope.register(fastifyStatic, { root: dir, prefix: '/console/', index: false, cacheControl: false });
    // The router ignores trailing slashes, so `/console` and `/console/` are this one route.
    scope.get('/console', async (_req, reply) => reply.sendFile('index.html'));
  });
};
