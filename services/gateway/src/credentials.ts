import { createHash } from 'node:crypto';
import { AppError, internalOperations, type AuthenticateReply, type Subjects } from '@loyalty/contracts';
import { callService, type NatsConnection } from '@loyalty/runtime';

interface Cached {
  keyHash: string;
  reply: AuthenticateReply;
  expiresAt: number;
}

/** A verified member token: its session, and until when this replica trusts it. */
interface CachedSession {
  tenantId: number;
  memberId: number;
  sessionId: number;
  expiresAt: number;
}

const hashKey = (secret: string) => createHash('sha256').update(secret).digest('base64');

/** Entries kept at most per cache; beyond it the oldest go first (Map order is insertion order). */
const MAX_ENTRIES = 20_000;

/**
 * Resolves `X-App-Id`/`X-Api-Key` (and `X-Member-Token`) through identity. A verified app key and
 * a verified member token are each remembered for a short TTL (never past the session's own end)
 * to save a round trip per request; identity broadcasts every key rotation and revocation and
 * every member logout and token refresh, and each gateway replica forgets that app or session at
 * once.
 *
 * A revoked key or ended session stops working on every replica within AUTH_CACHE_TTL_MS at the
 * latest:
 * - a lookup that was already on its way when the eviction arrived may carry identity's answer
 *   from before the change; it answers its own request but is not cached (each eviction is
 *   numbered, and a lookup started before the app's or session's last eviction is not remembered);
 * - a replica that loses its NATS connection may miss broadcasts meanwhile, so it forgets every
 *   key and token when the connection drops and again when it is back (`forgetAll`);
 * - a broadcast that is lost otherwise (identity stopped between its commit and the publish) is
 *   covered by the TTL, the hard bound.
 */
export class CredentialResolver {
  private readonly cache = new Map<string, Cached>();
  /** Verified member tokens by the hash of the token. */
  private readonly sessions = new Map<string, CachedSession>();
  /** Session id -> token hash, to forget a session by the id identity broadcasts. */
  private readonly sessionTokens = new Map<number, string>();
  /** Number of the latest eviction (of one app, one session or of all). */
  private evictions = 0;
  /** Per app or session: number and time of its latest eviction, kept while a lookup could still be in flight. */
  private readonly evictedAt = new Map<string, { seq: number; at: number }>();
  private allEvictedAt = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects,
    private readonly ttlMs: number,
    private readonly timeoutMs: number,
  ) {}

  private noteEviction(key: string): void {
    const now = Date.now();
    this.evictedAt.set(key, { seq: ++this.evictions, at: now });
    // An entry matters only to lookups started before it; none outlives its timeout.
    if (this.evictedAt.size > 1_000) {
      for (const [id, e] of this.evictedAt) if (e.at < now - 2 * this.timeoutMs) this.evictedAt.delete(id);
    }
  }

  forget(appId: string): void {
    this.cache.delete(appId);
    this.noteEviction(`app:${appId}`);
  }

  /** Forget a member session (logout, refresh): its token is asked of identity again. */
  forgetSession(sessionId: number): void {
    const tokenHash = this.sessionTokens.get(sessionId);
    if (tokenHash !== undefined) this.sessions.delete(tokenHash);
    this.sessionTokens.delete(sessionId);
    this.noteEviction(`session:${sessionId}`);
  }

  /** Forget every key and token (a replica that was disconnected may have missed evictions). */
  forgetAll(): void {
    this.cache.clear();
    this.sessions.clear();
    this.sessionTokens.clear();
    this.evictedAt.clear();
    this.allEvictedAt = ++this.evictions;
  }

  /** Whether this key of this app is verified by the cache alone (no identity round trip). */
  isCached(appId: string, apiKey: string): boolean {
    const hit = this.cache.get(appId);
    return hit !== undefined && hit.expiresAt > Date.now() && hit.keyHash === hashKey(apiKey);
  }

  /** Whether this member token is verified by the cache alone. */
  isTokenCached(memberToken: string): boolean {
    const hit = this.sessions.get(hashKey(memberToken));
    return hit !== undefined && hit.expiresAt > Date.now();
  }

  private evictedSince(key: string, started: number): boolean {
    return this.allEvictedAt > started || (this.evictedAt.get(key)?.seq ?? 0) > started;
  }

  async resolve(
    appId: string,
    apiKey: string,
    memberToken: string | undefined,
    requestId: string,
  ): Promise<AuthenticateReply> {
    const keyHash = hashKey(apiKey);
    const tokenHash = memberToken === undefined ? undefined : hashKey(memberToken);
    const now = Date.now();
    const hit = this.cache.get(appId);
    if (hit && hit.keyHash === keyHash && hit.expiresAt > now) {
      if (tokenHash === undefined) return hit.reply;
      const session = this.sessions.get(tokenHash);
      // A token is its tenant's: another tenant's app presenting it is asked of identity (which refuses it).
      if (session && session.expiresAt > now && session.tenantId === hit.reply.tenant_id)
        return { ...hit.reply, member_id: session.memberId, session_id: session.sessionId };
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
    const { member_id, session_id, session_expires_at, ...app } = reply.data;
    if (this.ttlMs > 0 && !this.evictedSince(`app:${appId}`, started)) {
      remember(this.cache, appId, { keyHash, reply: app, expiresAt: Date.now() + this.ttlMs });
    }
    if (
      this.ttlMs > 0 &&
      tokenHash !== undefined &&
      member_id !== undefined &&
      session_id !== undefined &&
      !this.evictedSince(`session:${session_id}`, started)
    ) {
      const ends = session_expires_at ? Date.parse(session_expires_at) : Date.now();
      const expiresAt = Math.min(Date.now() + this.ttlMs, ends);
      if (expiresAt > Date.now()) {
        remember(this.sessions, tokenHash, {
          tenantId: app.tenant_id,
          memberId: member_id,
          sessionId: session_id,
          expiresAt,
        });
        this.sessionTokens.set(session_id, tokenHash);
        if (this.sessionTokens.size > MAX_ENTRIES * 2) this.pruneSessionIndex();
      }
    }
    return member_id === undefined ? app : { ...app, member_id, session_id };
  }

  /** Drop index entries whose token is no longer cached (bounded memory). */
  private pruneSessionIndex(): void {
    for (const [id, tokenHash] of this.sessionTokens) {
      if (this.sessions.get(tokenHash)?.sessionId !== id) this.sessionTokens.delete(id);
    }
  }
}

function remember<V extends { expiresAt: number }>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key); // re-inserted last: the order of the map is the order of verification
  map.set(key, value);
  // Expired entries go from the front (the oldest verified; a session's own end can make a later
  // one expire sooner, which the size bound then covers): a few per insert at most, so the cache
  // holds about what was verified within the TTL, never more than MAX_ENTRIES.
  for (const [k, v] of map) {
    if (map.size <= MAX_ENTRIES && v.expiresAt > Date.now()) break;
    map.delete(k);
  }
}

/**
 * Every replica hears every rotation/revocation and every ended session (no queue group) and
 * forgets that app's key or that member token; on a lost or regained NATS connection it forgets
 * every key and token, since broadcasts may have been missed.
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
        const change = msg.json<{ app_id?: unknown; session_id?: unknown }>();
        if (typeof change.app_id === 'string') resolver.forget(change.app_id);
        if (typeof change.session_id === 'number') resolver.forgetSession(change.session_id);
      } catch {
        /* a malformed broadcast changes nothing */
      }
    },
  });
}
