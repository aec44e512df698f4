import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { AppError, type AuthenticateReply, type Meta, type Operation } from '@loyalty/contracts';
import type { CredentialResolver } from '../credentials.ts';
import { header } from '../headers.ts';
import { idempotencyKeyOf } from '../idempotency.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The app (and member) the request's credentials resolved to; set while authenticating. */
    auth: AuthenticateReply | undefined;
    /** The `meta` sent to the owning service with the request's data; set by `authenticate(op)`. */
    meta: Meta | undefined;
  }
  interface FastifyInstance {
    /** The preValidation hook of an `/api/v1` operation: credentials, scope, Idempotency-Key, `req.meta`. */
    authenticate(op: Operation): (req: FastifyRequest) => Promise<void>;
  }
}

export interface CredentialsOptions {
  credentials: CredentialResolver;
}

/**
 * App key and member token authentication of `/api/v1` calls: `X-App-Id`/`X-Api-Key` (and
 * `X-Member-Token` where the operation needs a member) resolved through identity, the scope
 * checked, the Idempotency-Key header checked, and the request's `meta` built.
 */
export const credentials = fp<CredentialsOptions>(
  async (app, { credentials: resolver }) => {
    app.decorateRequest('auth', undefined);
    app.decorateRequest('meta', undefined);
    app.decorate('authenticate', (op: Operation) => async (req: FastifyRequest) => {
      req.meta = await authenticate(resolver, req, op);
    });
  },
  { name: 'gateway-credentials', fastify: '5.x' },
);

async function authenticate(resolver: CredentialResolver, req: FastifyRequest, op: Operation): Promise<Meta> {
  const appId = header(req, 'x-app-id');
  const apiKey = header(req, 'x-api-key');
  if (!appId || !apiKey) throw new AppError('missing_credentials');
  const memberToken = header(req, 'x-member-token');
  if (op.memberToken === true && !memberToken) throw new AppError('member_token_required');
  const auth = await resolver.resolve(appId, apiKey, op.memberToken !== false ? memberToken : undefined, req.id);
  req.auth = auth;
  if (op.scope && !auth.scopes.includes(op.scope))
    throw new AppError('insufficient_scope', `This operation needs the ${op.scope} scope.`, {
      required_scope: op.scope,
    });
  const idempotencyKey = idempotencyKeyOf(req, op);
  return {
    request_id: req.id,
    tenant_id: auth.tenant_id,
    app_id: auth.app_id,
    sandbox: auth.sandbox,
    scopes: auth.scopes,
    ...(auth.member_id !== undefined ? { member_id: auth.member_id, session_id: auth.session_id } : {}),
    ...(idempotencyKey !== undefined ? { idempotency_key: idempotencyKey } : {}),
  };
}
