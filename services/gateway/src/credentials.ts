import { createHash } from 'node:crypto';
import { internalOperations, type AuthenticateReply, type Subjects } from '@loyalty/contracts';
import {
  ReplicaCache,
  type LoadTicket,
  ServiceClient,
  type Logger,
  type Metrics,
  type NatsConnection,
  type ServicePart,
} from '@loyalty/runtime';

/** A verified app key: the hash of the key and who it is. */
interface CachedApp {
  keyHash: string;
  reply: AuthenticateReply;
}

/** A verified member token: its session. */
interface CachedSession {
  tokenHash: string;
  tenantId: number;
  memberId: number;
  sessionId: number;
}

const hashKey = (secret: string) => createHash('sha256').update(secret).digest('base64');

/** Entries kept at most per cache; beyond it the least recently used go first. */
const MAX_ENTRIES = 20_000;

/** What a credentials-changed broadcast names: an app (`app_id`) or a member session (`session_id`). */
const changedApp = (m: unknown): string[] =>
  typeof m === 'object' && m !== null && 'app_id' in m && typeof m.app_id === 'string' ? [m.app_id] : [];
const changedSession = (m: unknown): number[] =>
  typeof m === 'object' && m !== null && 'session_id' in m && typeof m.session_id === 'number' ? [m.session_id] : [];

export interface CredentialResolverOptions {
  nc: NatsConnection;
  subjects: Subjects;
  /** How long a verified key or token is trusted without asking identity (0: never cached). */
  ttlMs: number;
  /** Upper bound of one call to identity. */
  timeoutMs: number;
  log: Logger;
  metrics?: Metrics;
}

/**
 * Resolves `X-App-Id`/`X-Api-Key` (and `X-Member-Token`) through identity's typed `authenticate`
 * operation (its reply checked against the contract). A verified app key and a verified member
 * token are each remembered for a short TTL (never past the session's own end) to save a round
 * trip per request; identity broadcasts every key rotation and revocation and every member logout
 * and token refresh, and each gateway replica forgets that app or session at once.
 *
 * A revoked key or ended session stops working on every replica within AUTH_CACHE_TTL_MS at the
 * latest:
 * - a lookup that was already on its way when the eviction arrived may carry identity's answer
 *   from before the change; it answers its own request but is not cached (ReplicaCache's load
 *   guard: the app's or session's forget came after the lookup started);
 * - a replica that loses its NATS connection may miss broadcasts meanwhile, so it forgets every
 *   key and token when the connection drops and again when it is back;
 * - a broadcast that is lost otherwise (identity stopped between its commit and the publish) is
 *   covered by the TTL, the hard bound.
 */
export class CredentialResolver {
  /** Verified app keys by app id. */
  readonly apps: ReplicaCache<string, CachedApp>;
  /** Verified member tokens by session id (identity broadcasts the session id of an ended session). */
  readonly sessions: ReplicaCache<number, CachedSession>;
  /** Token hash -> session id, to find a token's session; bounded (oldest first), checked against the session. */
  private readonly sessionOfToken = new Map<string, number>();
  /** Questions to identity in flight, by credential, with the caches' state when each was asked. */
  private readonly resolving = new Map<
    string,
    { app: LoadTicket; session: LoadTicket; answer: Promise<AuthenticateReply> }
  >();
  private readonly identity: ServiceClient;

  constructor(private readonly opts: CredentialResolverOptions) {
    const { nc, subjects, ttlMs, metrics } = opts;
    const subject = subjects.credentialsChanged();
    this.identity = new ServiceClient(nc, subjects, { timeoutMs: opts.timeoutMs, log: opts.log });
    this.apps = new ReplicaCache({
      name: 'gateway-app-keys',
      ttlMs,
      maxEntries: MAX_ENTRIES,
      metrics,
      nc,
      broadcast: { subject, forgets: changedApp },
    });
    this.sessions = new ReplicaCache({
      name: 'gateway-member-tokens',
      ttlMs,
      maxEntries: MAX_ENTRIES,
      metrics,
      nc,
      broadcast: { subject, forgets: changedSession },
    });
  }

  /** The caches, started and stopped with the gateway (they listen for the broadcast and reconnects). */
  get caches(): ServicePart[] {
    return [this.apps, this.sessions];
  }

  /** Whether this key of this app is verified by the cache alone (no identity round trip). */
  isCached(appId: string, apiKey: string): boolean {
    return this.apps.get(appId)?.keyHash === hashKey(apiKey);
  }

  /** Whether this member token is verified by the cache alone. */
  isTokenCached(memberToken: string): boolean {
    return this.cachedSession(hashKey(memberToken)) !== undefined;
  }

  async resolve(
    appId: string,
    apiKey: string,
    memberToken: string | undefined,
    requestId: string,
  ): Promise<AuthenticateReply> {
    const keyHash = hashKey(apiKey);
    const tokenHash = memberToken === undefined ? undefined : hashKey(memberToken);
    const cached = this.fromCache(appId, keyHash, tokenHash);
    if (cached) return cached;
    // Concurrent misses of one credential share one question to identity (after a forget-all, a
    // burst of requests with one API key would otherwise each ask), unless anything was forgotten
    // since that question was asked: then its answer may predate the change.
    const flight = `${appId}\0${keyHash}\0${tokenHash ?? ''}`;
    const running = this.resolving.get(flight);
    if (running && running.app === this.apps.ticket() && running.session === this.sessions.ticket())
      return running.answer;
    const tickets = { app: this.apps.ticket(), session: this.sessions.ticket() };
    const answer = this.ask(appId, apiKey, memberToken, requestId, tickets);
    this.resolving.set(flight, { ...tickets, answer });
    try {
      return await answer;
    } finally {
      if (this.resolving.get(flight)?.answer === answer) this.resolving.delete(flight);
    }
  }

  /** Identity's answer for a credential, cached unless it was forgotten while asked. */
  private async ask(
    appId: string,
    apiKey: string,
    memberToken: string | undefined,
    requestId: string,
    tickets: { app: LoadTicket; session: LoadTicket },
  ): Promise<AuthenticateReply> {
    const keyHash = hashKey(apiKey);
    const tokenHash = memberToken === undefined ? undefined : hashKey(memberToken);
    const reply = await this.identity.call(
      internalOperations.authenticate,
      { request_id: requestId },
      { app_id: appId, api_key: apiKey, member_token: memberToken },
    );
    const { member_id, session_id, session_expires_at, ...app } = reply;
    this.apps.set(appId, { keyHash, reply: app }, tickets.app);
    if (tokenHash === undefined || member_id === undefined || session_id === undefined) return app;
    // Never trusted past the session's own end.
    const ends = session_expires_at ? Date.parse(session_expires_at) : Date.now();
    const session = { tokenHash, tenantId: app.tenant_id, memberId: member_id, sessionId: session_id };
    if (this.sessions.set(session_id, session, tickets.session, ends - Date.now())) this.indexToken(session);
    return { ...app, member_id, session_id };
  }

  /** The answer from the cache alone, if the key (and the token, when one is presented) are cached. */
  private fromCache(appId: string, keyHash: string, tokenHash: string | undefined): AuthenticateReply | undefined {
    const hit = this.apps.get(appId);
    if (hit?.keyHash !== keyHash) return undefined;
    if (tokenHash === undefined) return hit.reply;
    const session = this.cachedSession(tokenHash);
    // A token is its tenant's: another tenant's app presenting it is asked of identity (which refuses it).
    if (session?.tenantId !== hit.reply.tenant_id) return undefined;
    return { ...hit.reply, member_id: session.memberId, session_id: session.sessionId };
  }

  private cachedSession(tokenHash: string): CachedSession | undefined {
    const sessionId = this.sessionOfToken.get(tokenHash);
    const session = sessionId === undefined ? undefined : this.sessions.get(sessionId);
    return session?.tokenHash === tokenHash ? session : undefined;
  }

  private indexToken(session: CachedSession): void {
    this.sessionOfToken.delete(session.tokenHash); // re-inserted last: the map's order is the order of verification
    this.sessionOfToken.set(session.tokenHash, session.sessionId);
    for (const key of this.sessionOfToken.keys()) {
      if (this.sessionOfToken.size <= MAX_ENTRIES) break;
      this.sessionOfToken.delete(key);
    }
  }
}
