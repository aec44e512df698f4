import { createHash } from 'node:crypto';
import { AppError, internalOperations, type AuthenticateReply, type Subjects } from '@loyalty/contracts';
import { callService, type NatsConnection } from '@loyalty/runtime';

interface Cached {
  keyHash: string;
  reply: AuthenticateReply;
  expiresAt: number;
}

const hashKey = (apiKey: string) => createHash('sha256').update(apiKey).digest('base64');

/**
 * Resolves `X-App-Id`/`X-Api-Key` (and `X-Member-Token`) through identity. A verified app key is
 * remembered for a short TTL to save a round trip per request; identity broadcasts every rotation
 * and revocation, and each gateway replica forgets that app at once. Member tokens are checked
 * with identity on every call, so a logout takes effect everywhere immediately.
 *
 * A revoked or rotated key stops working on every replica within AUTH_CACHE_TTL_MS at the latest:
 * - a lookup that was already on its way when the eviction arrived may carry identity's answer
 *   from before the change; it answers its own request but is not cached (each eviction is
 *   numbered, and a lookup started before the app's last eviction is not remembered);
 * - a replica that loses its NATS connection may miss broadcasts meanwhile, so it forgets every
 *   key when the connection drops and again when it is back (`forgetAll`);
 * - a broadcast that is lost otherwise (identity stopped between its commit and the publish) is
 *   covered by the TTL, the hard bound.
 */
export class CredentialResolver {
  private readonly cache = new Map<string, Cached>();
  /** Number of the latest eviction (of one app or of all). */
  private evictions = 0;
  /** Per app: number and time of its latest eviction, kept while a lookup could still be in flight. */
  private readonly evictedAt = new Map<string, { seq: number; at: number }>();
  private allEvictedAt = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects,
    private readonly ttlMs: number,
    private readonly timeoutMs: number,
  ) {}

  forget(appId: string): void {
    this.cache.delete(appId);
    const now = Date.now();
    this.evictedAt.set(appId, { seq: ++this.evictions, at: now });
    // An entry matters only to lookups started before it; none outlives its timeout.
    if (this.evictedAt.size > 1_000) {
      for (const [id, e] of this.evictedAt) if (e.at < now - 2 * this.timeoutMs) this.evictedAt.delete(id);
    }
  }

  /** Forget every key (a replica that was disconnected may have missed evictions). */
  forgetAll(): void {
    this.cache.clear();
    this.evictedAt.clear();
    this.allEvictedAt = ++this.evictions;
  }

  /** Whether this key of this app is verified by the cache alone (no identity round trip). */
  isCached(appId: string, apiKey: string): boolean {
    const hit = this.cache.get(appId);
    return hit !== undefined && hit.expiresAt > Date.now() && hit.keyHash === hashKey(apiKey);
  }

  async resolve(
    appId: string,
    apiKey: string,
    memberToken: string | undefined,
    requestId: string,
  ): Promise<AuthenticateReply> {
    const keyHash = hashKey(apiKey);
    if (memberToken === undefined) {
      const hit = this.cache.get(appId);
      if (hit && hit.keyHash === keyHash && hit.expiresAt > Date.now()) return hit.reply;
    }
    const started = this.evictions;
    const op = internalOperations.authenticate;
    const reply = await callService<AuthenticateReply>(
      this.nc,
      this.subjects.op(op.service, op.operation),
      { meta: { request_id: requestId }, data: { app_id: appId, api_key: apiKey, member_token: memberToken } },
      requestId,
      this.timeoutMs,
    );
    if (!reply.ok) throw new AppError(reply.error.code, reply.error.message);
    if (this.ttlMs > 0 && this.allEvictedAt <= started && (this.evictedAt.get(appId)?.seq ?? 0) <= started) {
      const { member_id: _m, session_id: _s, ...app } = reply.data;
      this.cache.set(appId, { keyHash, reply: app, expiresAt: Date.now() + this.ttlMs });
    }
    return reply.data;
  }
}

/**
 * Every replica hears every rotation/revocation (no queue group) and forgets that app's key; on a
 * lost or regained NATS connection it forgets every key, since broadcasts may have been missed.
 */
export function watchCredentialChanges(
  nc: NatsConnection,
  subjects: Subjects,
  resolver: CredentialResolver,
): ReturnType<NatsConnection['subscribe']> {
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'reconnect') resolver.forgetAll();
    }
  })();
  return nc.subscribe(subjects.credentialsChanged(), {
    callback: (_err, msg) => {
      try {
        resolver.forget((msg.json() as { app_id: string }).app_id);
      } catch {
        /* a malformed broadcast changes nothing */
      }
    },
  });
}
