import { createHash } from 'node:crypto';
import { AppError, internalOperations, type AuthenticateReply, type Subjects } from '@loyalty/contracts';
import { callService, type NatsConnection } from '@loyalty/runtime';

interface Cached {
  keyHash: string;
  reply: AuthenticateReply;
  expiresAt: number;
}

/**
 * Resolves `X-App-Id`/`X-Api-Key` (and `X-Member-Token`) through identity. A verified app key is
 * remembered for a short TTL to save a round trip per request; identity broadcasts every rotation
 * and revocation, and each gateway replica forgets that app at once. Member tokens are checked
 * with identity on every call, so a logout takes effect everywhere immediately.
 */
export class CredentialResolver {
  private readonly cache = new Map<string, Cached>();
  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects,
    private readonly ttlMs: number,
    private readonly timeoutMs: number,
  ) {}

  forget(appId: string): void {
    this.cache.delete(appId);
  }

  async resolve(
    appId: string,
    apiKey: string,
    memberToken: string | undefined,
    requestId: string,
  ): Promise<AuthenticateReply> {
    const keyHash = createHash('sha256').update(apiKey).digest('base64');
    if (memberToken === undefined) {
      const hit = this.cache.get(appId);
      if (hit && hit.keyHash === keyHash && hit.expiresAt > Date.now()) return hit.reply;
    }
    const op = internalOperations.authenticate;
    const reply = await callService<AuthenticateReply>(
      this.nc,
      this.subjects.op(op.service, op.operation),
      { meta: { request_id: requestId }, data: { app_id: appId, api_key: apiKey, member_token: memberToken } },
      requestId,
      this.timeoutMs,
    );
    if (!reply.ok) throw new AppError(reply.error.code, reply.error.message);
    if (this.ttlMs > 0) {
      const { member_id: _m, session_id: _s, ...app } = reply.data;
      this.cache.set(appId, { keyHash, reply: app, expiresAt: Date.now() + this.ttlMs });
    }
    return reply.data;
  }
}
