import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { AppError, internalOperations } from '@loyalty/contracts';
import type { ServiceClient } from '@loyalty/runtime';

export interface UnsubscribeOptions {
  /** identity's operations: the token is checked and the consent withdrawn there. */
  identity: ServiceClient;
}

export const UNSUBSCRIBE_PATH = '/api/v1/unsubscribe';

/** What a token looks like before identity checks its signature (mail/marketing.ts makes them). */
const TOKEN = /^u1\.\d{1,15}\.\d{1,15}\.[a-z_]{1,32}\.[A-Za-z0-9_-]{43}$/;

function tokenOf(req: FastifyRequest): string {
  const query: unknown = req.query;
  const token = typeof query === 'object' && query !== null && 'token' in query ? query.token : undefined;
  if (typeof token !== 'string' || !TOKEN.test(token)) throw new AppError('invalid_unsubscribe_token');
  return token;
}

/**
 * The pages' own policy: nothing loaded, no script, their inline style, the form posting only
 * here; not framed (a page of another site cannot overlay the button), and no referrer (the URL
 * holds the member's token).
 */
const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

const page = (body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
  `<title>Unsubscribe</title></head><body style="font-family:sans-serif;max-width:32rem;margin:3rem auto">${body}</body></html>`;

/**
 * The one-click unsubscribe link of marketing mail (RFC 8058), the one public route without app
 * credentials: the link's signed token names the member and the purpose. A mail client's button
 * POSTs `List-Unsubscribe=One-Click` (form-encoded) to it and the consent is withdrawn at once; a
 * browser opening the link (GET) gets a page whose button does the same POST, since a GET must
 * change nothing (mail scanners open links). Mechanism only: identity checks the token and
 * withdraws the consent.
 */
export const unsubscribeLinks: FastifyPluginAsync<UnsubscribeOptions> = async (app, { identity }) => {
  // The one-click POST's body says nothing the link does not (RFC 8058 section 3.1): read, ignored.
  app.addContentTypeParser(
    ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'],
    { parseAs: 'string', bodyLimit: 4096 },
    (_req, _body, done) => done(null, {}),
  );
  app.post(UNSUBSCRIBE_PATH, async (req, reply) => {
    const token = tokenOf(req);
    await identity.call(internalOperations.unsubscribe, { request_id: req.id }, { token });
    return reply
      .headers(PAGE_HEADERS)
      .send(page('<h1>You are unsubscribed</h1><p>We will send you no more marketing mail.</p>'));
  });
  app.get(UNSUBSCRIBE_PATH, async (req, reply) => {
    const token = tokenOf(req);
    const action = `${UNSUBSCRIBE_PATH}?token=${encodeURIComponent(token)}`;
    return reply
      .headers(PAGE_HEADERS)
      .send(
        page(
          `<h1>Unsubscribe</h1><p>Stop receiving marketing mail from us?</p>` +
            `<form method="post" action="${action}"><input type="hidden" name="List-Unsubscribe" value="One-Click">` +
            `<button type="submit">Unsubscribe</button></form>`,
        ),
      );
  });
};
