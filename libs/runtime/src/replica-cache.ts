import { LRUCache } from 'lru-cache';
import type { NatsConnection } from 'nats';
import type { Metrics } from './metrics.ts';
import { jsonCodec } from './nats.ts';

/** What a broadcast on the cache's subject makes it forget: some keys, or everything. */
export type Forgotten<K> = readonly K[] | 'all';

export interface ReplicaCacheOptions<K> {
  /** Names the cache in metrics (`loyalty_cache_lookups_total{cache}`). */
  name: string;
  /** How long an entry is trusted at most (the bound on a missed broadcast); 0 or less keeps nothing. */
  ttlMs: number;
  /** Entries kept at most; beyond it the least recently used go first. */
  maxEntries: number;
  metrics?: Metrics;
  /**
   * The connection whose lost and regained connection makes the cache forget everything (it may
   * have missed broadcasts meanwhile), and over which broadcasts arrive and are sent.
   */
  nc?: NatsConnection;
  /**
   * The subject every replica hears a change on (no queue group), and which keys a message of it
   * names (`message` is the decoded JSON; a message it cannot read should name no key).
   */
  broadcast?: { subject: string; forgets: (message: unknown) => Forgotten<K> };
}

/** The cache's state when a load started: what the load read is stored only if nothing of it was forgotten since. */
export type LoadTicket = number;

/** Forget records kept for in-flight loads at most; beyond it they collapse into one forget-all mark. */
const MAX_FORGET_RECORDS = 10_000;

/**
 * A per-replica cache of what another service or the database answered, forgotten on every
 * replica when it changes: the replica that changes something forgets it at once and broadcasts
 * the change (`announce`), every replica forgets what the broadcast names. Bounded three ways:
 * - the TTL bounds how long a lost broadcast can leave an old answer in use;
 * - a lost or regained NATS connection forgets everything (broadcasts may have been missed);
 * - a load that started before a forget of its key (or of everything) answers its own caller but
 *   is not stored: it may carry the answer from before the change (`ticket` ... `set`).
 */
export class ReplicaCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>> {
  private readonly entries: LRUCache<K, V> | undefined;
  /** Number of the latest forget (of one key or of all). */
  private forgets = 0;
  private allForgottenAt = 0;
  /** Per key, the number of its latest forget; only loads in flight need them. */
  private readonly forgottenAt = new Map<K, number>();
  private readonly listener: BroadcastListener | undefined;
  private running = false;
  /** Loads in flight, by key, with the ticket each took (concurrent misses share them). */
  private readonly loading = new Map<K, { ticket: LoadTicket; answer: Promise<V | undefined> }>();

  constructor(private readonly opts: ReplicaCacheOptions<K>) {
    const { nc, broadcast } = opts;
    this.listener =
      nc && broadcast
        ? new BroadcastListener(nc, broadcast.subject, (m) => this.forgetNamed(broadcast.forgets(m)))
        : undefined;
    this.entries = opts.ttlMs > 0 ? new LRUCache<K, V>({ max: opts.maxEntries, ttl: opts.ttlMs }) : undefined;
    opts.metrics?.gaugeSeries(
      'loyalty_cache_entries',
      'Entries held by a replica cache, by cache',
      'cache',
      opts.name,
      () => this.size,
    );
  }

  get name(): string {
    return this.opts.name;
  }

  get size(): number {
    return this.entries?.size ?? 0;
  }

  /** Listen for broadcasts and connection changes (the runtime calls it before consumers start). */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.listener?.start();
    if (this.opts.nc) void this.watchConnection(this.opts.nc);
  }

  stop(): void {
    this.running = false;
    this.listener?.stop();
  }

  /** The entry, counted as a hit or a miss. */
  get(key: K): V | undefined {
    const hit = this.entries?.get(key);
    this.opts.metrics?.cacheLookup(this.opts.name, hit === undefined ? 'miss' : 'hit');
    return hit;
  }

  /** Whether the key is held (not counted, not refreshed): tests, diagnostics. */
  has(key: K): boolean {
    return this.entries?.has(key) ?? false;
  }

  /**
   * The entry, or what `load` answers, stored unless the key was forgotten while it loaded
   * (undefined is not stored). Concurrent misses of one key share one load, as long as the key
   * was not forgotten since that load started (a caller never gets an answer older than its own
   * arrival's last forget): after a forget-all, a burst of requests with one credential asks its
   * owner once, not once per request.
   */
  async load(key: K, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const running = this.loading.get(key);
    if (running && !this.forgottenSince(key, running.ticket)) return running.answer;
    const ticket = this.ticket();
    const answer = load().then((value) => {
      if (value !== undefined) this.set(key, value, ticket);
      return value;
    });
    this.loading.set(key, { ticket, answer });
    try {
      return await answer;
    } finally {
      if (this.loading.get(key)?.answer === answer) this.loading.delete(key);
    }
  }

  /** Take before loading; pass to `set`. */
  ticket(): LoadTicket {
    return this.forgets;
  }

  /** Whether `key` (or everything) was forgotten after `ticket` was taken. */
  forgottenSince(key: K, ticket: LoadTicket): boolean {
    return this.allForgottenAt > ticket || (this.forgottenAt.get(key) ?? 0) > ticket;
  }

  /**
   * Store what a load that took `ticket` read, unless its key was forgotten since; `ttlMs` may
   * shorten the entry's life (never lengthen it). Answers whether it was stored.
   */
  set(key: K, value: V, ticket: LoadTicket, ttlMs = this.opts.ttlMs): boolean {
    if (!this.entries || ttlMs <= 0 || this.forgottenSince(key, ticket)) return false;
    this.entries.set(key, value, { ttl: Math.min(ttlMs, this.opts.ttlMs) });
    return true;
  }

  forget(key: K): void {
    this.entries?.delete(key);
    if (this.forgottenAt.size >= MAX_FORGET_RECORDS) this.markAllForgotten();
    else this.forgottenAt.set(key, ++this.forgets);
  }

  /** Forget every entry (a lost connection, a change that may touch any key). */
  forgetAll(): void {
    this.entries?.clear();
    this.markAllForgotten();
  }

  /** Forget here at once and tell every other replica through the broadcast subject. */
  announce(message: object): void {
    this.forgetNamed(this.opts.broadcast?.forgets(message) ?? 'all');
    if (this.opts.nc && this.opts.broadcast)
      this.opts.nc.publish(this.opts.broadcast.subject, jsonCodec.encode(message));
  }

  private forgetNamed(forgotten: Forgotten<K>): void {
    if (forgotten === 'all') this.forgetAll();
    else for (const key of forgotten) this.forget(key);
  }

  /** Loads in flight compare with this one mark instead (conservative: they are not stored). */
  private markAllForgotten(): void {
    this.forgottenAt.clear();
    this.allForgottenAt = ++this.forgets;
  }

  private async watchConnection(nc: NatsConnection): Promise<void> {
    // The iterator ends when the connection closes.
    for await (const s of nc.status()) {
      if (!this.running) return;
      if (s.type === 'disconnect' || s.type === 'reconnect') this.forgetAll();
    }
  }
}

/**
 * Hears every message of a broadcast subject (no queue group: every replica hears each one) and
 * hands its decoded JSON to `handle` (undefined for a message that is not JSON).
 */
export class BroadcastListener {
  private subscription: ReturnType<NatsConnection['subscribe']> | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subject: string,
    private readonly handle: (message: unknown) => void,
  ) {}

  start(): void {
    this.subscription ??= this.nc.subscribe(this.subject, {
      callback: (err, msg) => {
        if (!err) this.handle(decoded(msg.data));
      },
    });
  }

  stop(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
  }
}

function decoded(data: Uint8Array): unknown {
  try {
    return jsonCodec.decode(data);
  } catch {
    return undefined;
  }
}
