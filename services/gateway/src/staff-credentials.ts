import { createHash } from 'node:crypto';
import { internalOperations, StaffCredentialsChanged, type StaffActorMeta, type Subjects } from '@loyalty/contracts';
import {
  ReplicaCache,
  ServiceClient,
  systemClock,
  type Clock,
  type LoadTicket,
  type Logger,
  type Metrics,
  type NatsConnection,
  type ServicePart,
} from '@loyalty/runtime';

/** Who a staff token is: what identity's `internal.staff.authenticate` answers. */
export interface StaffIdentity {
  tenant_id: number;
  staff: StaffActorMeta;
  session_id: number;
}

/** A verified staff token: its session (the user's role is held apart, by user). */
interface CachedStaffSession {
  tokenHash: string;
  tenantId: number;
  staffId: number;
  /** The session's end (ms since the epoch, on the gateway's clock): never trusted past it. */
  endsAt: number;
}

/** A staff user as a verified token showed them. */
interface CachedStaffUser {
  tenantId: number;
  staff: StaffActorMeta;
}

const hashToken = (token: string) => createHash('sha256').update(token).digest('base64');

/** Entries kept at most per cache; beyond it the least recently used go first. */
const MAX_ENTRIES = 10_000;

/** What a credentials-changed broadcast names of staff: a session ended (sign-out), or a user changed. */
const changedStaffSession = (m: unknown): number[] => {
  const change = StaffCredentialsChanged.safeParse(m);
  return change.success && 'staff_session_id' in change.data ? [change.data.staff_session_id] : [];
};
const changedStaffUser = (m: unknown): number[] => {
  const change = StaffCredentialsChanged.safeParse(m);
  return change.success && 'staff_id' in change.data ? [change.data.staff_id] : [];
};

export interface StaffCredentialResolverOptions {
  nc: NatsConnection;
  subjects: Subjects;
  /** How long a verified staff token is trusted without asking identity (0: never cached). */
  ttlMs: number;
  /** Upper bound of one call to identity. */
  timeoutMs: number;
  log: Logger;
  metrics?: Metrics;
  /** The clock a session's end is compared with (identity's clock; tests move both). */
  clock?: Clock;
}

/**
 * Resolves a staff token (`Authorization: Bearer` on `/staff/v1`) through identity's
 * `internal.staff.authenticate`, and remembers the answer for a short TTL, never past the
 * session's end, so a console's calls do not each cost a round trip to identity. Two caches: the
 * sessions (by session id, found from the token's hash) and the users' roles (by staff id). Identity
 * broadcasts on `credentials-changed` every staff sign-out (`staff_session_id`) and every change of
 * a staff user — role, deactivation (which ends their sessions), the tenant's deactivation or
 * reactivation (`staff_id`) — and every replica forgets that session or user at once. A token is
 * answered from the cache only when both its session and its user are held.
 *
 * The same bounds as app keys and member tokens (credentials.ts): a lookup that was in flight when
 * its session or user was forgotten answers its own request but is not cached; a lost or regained
 * NATS connection forgets everything; the TTL bounds a broadcast that was lost.
 */
export class StaffCredentialResolver {
  /** Verified staff tokens by session id (identity broadcasts the session id of a sign-out). */
  readonly sessions: ReplicaCache<number, CachedStaffSession>;
  /** Staff users (tenant, role, email) by id (identity broadcasts the id of a changed user). */
  readonly users: ReplicaCache<number, CachedStaffUser>;
  /** Token hash -> session id, to find a token's session; bounded (oldest first), checked against the session. */
  private readonly sessionOfToken = new Map<string, number>();
  /** Questions to identity in flight, by token hash, with the caches' state when each was asked. */
  private readonly resolving = new Map<
    string,
    { session: LoadTicket; user: LoadTicket; answer: Promise<StaffIdentity> }
  >();
  private readonly identity: ServiceClient;
  private readonly clock: Clock;

  constructor(opts: StaffCredentialResolverOptions) {
    const { nc, subjects, ttlMs, metrics } = opts;
    const subject = subjects.credentialsChanged();
    this.clock = opts.clock ?? systemClock;
    this.identity = new ServiceClient(nc, subjects, { timeoutMs: opts.timeoutMs, log: opts.log });
    this.sessions = new ReplicaCache({
      name: 'gateway-staff-sessions',
      ttlMs,
      maxEntries: MAX_ENTRIES,
      metrics,
      nc,
      broadcast: { subject, forgets: changedStaffSession },
    });
    this.users = new ReplicaCache({
      name: 'gateway-staff-users',
      ttlMs,
      maxEntries: MAX_ENTRIES,
      metrics,
      nc,
      broadcast: { subject, forgets: changedStaffUser },
    });
  }

  /** The caches, started and stopped with the gateway (they listen for the broadcast and reconnects). */
  get caches(): ServicePart[] {
    return [this.sessions, this.users];
  }

  /** Whether this staff token is verified by the cache alone (no identity round trip). */
  isCached(token: string): boolean {
    return this.fromCache(hashToken(token)) !== undefined;
  }

  async resolve(token: string, requestId: string): Promise<StaffIdentity> {
    const tokenHash = hashToken(token);
    const cached = this.fromCache(tokenHash);
    if (cached) return cached;
    // Concurrent misses of one token share one question (a console opens a page with several
    // calls), unless anything was forgotten since it was asked: its answer may predate the change.
    const running = this.resolving.get(tokenHash);
    if (running && running.session === this.sessions.ticket() && running.user === this.users.ticket())
      return running.answer;
    const tickets = { session: this.sessions.ticket(), user: this.users.ticket() };
    const answer = this.ask(token, tokenHash, requestId, tickets);
    this.resolving.set(tokenHash, { ...tickets, answer });
    try {
      return await answer;
    } finally {
      if (this.resolving.get(tokenHash)?.answer === answer) this.resolving.delete(tokenHash);
    }
  }

  /** Identity's answer for a token, cached unless its session or user was forgotten while asked. */
  private async ask(
    token: string,
    tokenHash: string,
    requestId: string,
    tickets: { session: LoadTicket; user: LoadTicket },
  ): Promise<StaffIdentity> {
    const reply = await this.identity.call(
      internalOperations.authenticateStaff,
      { request_id: requestId },
      { staff_token: token },
    );
    const { tenant_id, staff, session_id, session_expires_at } = reply;
    const answer = { tenant_id, staff, session_id };
    // Without its end, the token is not cached.
    if (session_expires_at === undefined) return answer;
    const endsAt = Date.parse(session_expires_at);
    const left = endsAt - this.clock.now().getTime();
    const user = this.users.set(staff.id, { tenantId: tenant_id, staff }, tickets.user);
    const session = { tokenHash, tenantId: tenant_id, staffId: staff.id, endsAt };
    // The session is kept only with its user: a user forgotten meanwhile leaves the token uncached.
    if (user && this.sessions.set(session_id, session, tickets.session, left)) this.indexToken(tokenHash, session_id);
    return answer;
  }

  /** The answer from the cache alone: the token's session, not ended, and its user. */
  private fromCache(tokenHash: string): StaffIdentity | undefined {
    const sessionId = this.sessionOfToken.get(tokenHash);
    const session = sessionId === undefined ? undefined : this.sessions.get(sessionId);
    if (session?.tokenHash !== tokenHash || sessionId === undefined) return undefined;
    if (session.endsAt <= this.clock.now().getTime()) {
      this.sessions.forget(sessionId);
      return undefined;
    }
    const user = this.users.get(session.staffId);
    if (user?.tenantId !== session.tenantId) return undefined;
    return { tenant_id: session.tenantId, staff: user.staff, session_id: sessionId };
  }

  private indexToken(tokenHash: string, sessionId: number): void {
    this.sessionOfToken.delete(tokenHash); // re-inserted last: the map's order is the order of verification
    this.sessionOfToken.set(tokenHash, sessionId);
    for (const key of this.sessionOfToken.keys()) {
      if (this.sessionOfToken.size <= MAX_ENTRIES) break;
      this.sessionOfToken.delete(key);
    }
  }
}
