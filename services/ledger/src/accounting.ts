import { AppError, type ServiceMeta } from '@loyalty/contracts';
import {
  isUniqueViolation,
  withTransaction,
  type Clock,
  type Outbox,
  type Pool,
  type PoolClient,
  type Queryable,
  type ReplayStore,
} from '@loyalty/runtime';
import { planRefund, type RefundPlan } from './lots/terms.ts';
import { mergedInto } from './merges/member-merge.ts';
import { memberRank } from './store/tiers.ts';
import { StaleTierRank } from './tiers/moves.ts';
import type { JournalEvent } from './domain/journal.ts';
import { fromCents, MAX_BALANCE } from './domain/money.ts';
import type { CardCache } from './card-cache.ts';
import type { MemberDirectory } from './clients.ts';
import type { MemberPins } from './member-pins.ts';
import type { PostingBatcher } from './posting-batcher.ts';
import {
  accountOf,
  appendJournal,
  earnByReference,
  earnedOnOtherCard,
  importedHistoryPage,
  journalPage,
  postMany,
  refundedOnReference,
  setAmounts,
  type AccountKey,
  type JournalEntry,
  type PostedEntry,
  type PostedTier,
  type Posting,
} from './store/accounts.ts';
import {
  accountState,
  lockAccount,
  lotOfCredit,
  settleAccounts,
  takeFromLot,
  takeFromLots,
  type AccountAmounts,
  type Expiry,
  type LotEventSubjects,
} from './lots/store.ts';

export interface LedgerDeps {
  pool: Pool;
  clock: Clock;
  members: MemberDirectory;
  cards: CardCache;
  pins: MemberPins;
  /** Group commit of the postings made outside a transaction. */
  postings: PostingBatcher;
  outbox: Outbox;
  replays: ReplayStore;
  /** Subjects of the expiry events a settle writes (lots/store.ts). */
  expiredSubjects: LotEventSubjects;
}

/** The request meta the ledger reads: tenant, request id, member token, Idempotency-Key. */
export type LedgerMeta = ServiceMeta & { member_id?: number };

export interface BalanceChange {
  entry: JournalEntry;
  /** The member's tier after a credit on a card with tiers (the posting statement decided it). */
  tier?: PostedTier;
  /** Spendable balance before and after (a pending credit leaves it as it was). */
  previous: number;
  balance: number;
}

/** An account as the balance operations answer it: spendable, pending, held and the next expiries. */
export interface AccountView {
  balance: number;
  pending: number;
  held: number;
  next_expiries: Expiry[];
}

export const EMPTY_ACCOUNT: AccountView = { balance: 0, pending: 0, held: 0, next_expiries: [] };

function duplicateReference(originalId: number | undefined): AppError {
  return new AppError(
    'duplicate_reference',
    undefined,
    originalId === undefined ? {} : { original_transaction_id: originalId },
  );
}

/** The member named by member_id (wins), email or phone. */
export function memberBy(d: { member_id?: number; email?: string; phone?: string }) {
  if (d.member_id !== undefined) return { member_id: d.member_id };
  if (d.email !== undefined) return { email: d.email };
  return { phone: d.phone };
}

export type Direction = 'credit' | 'debit';

/** What a debit the spendable balance did not cover answers (it wrote nothing); reads with `db`. */
export type Uncovered = (db: Queryable) => Promise<AppError>;

/** A posting's direction; a debit names its refusal, for when the spendable balance does not cover it. */
export type PostingDirection = { direction: 'credit' } | { direction: 'debit'; uncovered: Uncovered };

/** Which operation a change is, for its Idempotency-Key record: keys of HTTP clients and of other services are kept apart. */
export interface OperationKey {
  operation: string;
  data: unknown;
  source: 'http' | 'service';
}

/** How `posting` posts: its operation, its direction and, for an earn, the reference it claims. */
export type PostingOptions<T> = OperationKey &
  PostingDirection & {
    earnReference?: { cardId: number; reference: string };
    /** With a key: run first in the key's transaction; an answer other than undefined replaces the posting. */
    instead?: (db: PoolClient, at: Date) => Promise<T | undefined>;
  };

function replayKey(meta: LedgerMeta, opts: OperationKey) {
  if (meta.idempotency_key === undefined) return undefined;
  return {
    tenantId: meta.tenant_id,
    key: `${opts.source}:${meta.idempotency_key}`,
    operation: opts.operation,
    data: opts.data,
  };
}

function change(p: Posting, entry: PostedEntry): BalanceChange {
  const moved = p.movement.lot?.pending ? 0 : entry.amount;
  return {
    entry,
    previous: entry.balance_after - moved,
    balance: entry.balance_after,
    ...(entry.tier ? { tier: entry.tier } : {}),
  };
}

const isDue = (a: { next_change_at: Date | null } | undefined, now: Date) =>
  a?.next_change_at != null && a.next_change_at.getTime() <= now.getTime();

/**
 * A credit that would take the balance past MAX_BALANCE (money.ts). One larger than the maximum
 * by itself is refused before it reaches the database (it could not even be an int8 there).
 */
function balanceLimit(p: Posting): AppError {
  return new AppError('balance_limit_exceeded', undefined, {
    max_balance: p.event.unit === 'cents' ? fromCents(MAX_BALANCE) : MAX_BALANCE,
  });
}

/** The posting's change; a posting the statement did not write is refused: a credit by the balance limit. */
async function postedOrRefused(
  how: PostingDirection,
  p: Posting,
  entry: PostedEntry | undefined,
  db: Queryable,
): Promise<BalanceChange> {
  if (entry !== undefined) return change(p, entry);
  if (how.direction === 'debit') throw await how.uncovered(db);
  // A credit refused: its rules were evaluated with a rank the member no longer holds, past
  // MAX_BALANCE, or its member was merged away meanwhile (the posting statement writes nothing for
  // a merged source; member-merge.ts).
  const assumed = p.movement.tier?.assumedRank;
  if (assumed !== undefined) {
    const rank = (await memberRank(db, p.account.cardId, p.account.memberId)) ?? null;
    if (rank !== assumed) throw new StaleTierRank(rank);
  }
  const { tenantId, memberId } = p.account;
  if ((await mergedInto(db, tenantId, memberId)) !== memberId) throw new AppError('member_not_found');
  throw balanceLimit(p);
}

/**
 * Balance changes shared by cashback (amounts in cents) and points (amounts in points). Each writes
 * the balance change, its lots and its journal row together.
 */
export class Accounting {
  constructor(private readonly deps: LedgerDeps) {}

  /**
   * Lock the account and bring it up to now (lots matured or expired since it was last settled)
   * in the caller's transaction, if time has changed it. Answers its amounts after that;
   * undefined: no account (`open` opens an empty one instead).
   */
  async settleLocked(db: PoolClient, k: AccountKey, now: Date, open = false): Promise<AccountAmounts | undefined> {
    const amounts = await lockAccount(db, k, now, open);
    if (!isDue(amounts, now)) return amounts;
    const settled = await settleAccounts(db, [k], now, this.deps.expiredSubjects);
    if (settled.expiredLots > 0) this.deps.outbox.written(db);
    return lockAccount(db, k, now, false);
  }

  /**
   * One posting (a credit, or a debit only when the spendable balance covers it) with its lots,
   * journal row and event, answered by `reply`. Without an Idempotency-Key it is posted on its
   * own: it needs no transaction and shares a group-committed statement with the postings of
   * the same moment. With a key it is posted inside the transaction that holds the key's record,
   * and the reply is stored there (a retry replays it). `reply` gets the posting `make` made and
   * reads, if it must, with the `db` it is given. A debit the balance does not cover writes
   * nothing and throws what its `uncovered` answers; a credit past MAX_BALANCE writes nothing and
   * throws balance_limit_exceeded.
   */
  posting<P extends Posting, T>(
    meta: LedgerMeta,
    opts: PostingOptions<T>,
    make: (at: Date) => P,
    reply: (change: BalanceChange, posting: P, db: Queryable) => Promise<T> | T,
  ): Promise<T> {
    return this.refusingDuplicateReferences(opts.earnReference, async () => {
      const key = replayKey(meta, opts);
      if (key === undefined) {
        const p = make(this.deps.clock.now());
        return reply(await this.postAlone(opts, p), p, this.deps.pool);
      }
      return this.deps.replays.run(key, async (db) => {
        const at = this.deps.clock.now();
        const answered = opts.instead && (await opts.instead(db, at));
        if (answered !== undefined) return answered;
        const p = make(at);
        return reply(await this.postInTransaction(db, opts, p), p, db);
      });
    });
  }

  /**
   * An earn decided inside one transaction (a card with earning rules: caps and budgets are read
   * and written under locks there), with the key's record when there is one; a second earn with
   * the reference is a 409 naming the first.
   */
  earnInTransaction<T>(
    meta: LedgerMeta,
    opts: OperationKey & { earnReference?: { cardId: number; reference: string } },
    fn: (db: PoolClient) => Promise<T>,
  ): Promise<T> {
    return this.refusingDuplicateReferences(opts.earnReference, () => this.inTransaction(meta, opts, fn));
  }

  /** A credit inside the caller's transaction (its event relayed when that commits). */
  credit(db: PoolClient, p: Posting): Promise<BalanceChange> {
    return this.postInTransaction(db, { direction: 'credit' }, p);
  }

  /** A change of several statements in one transaction, with the key's record when there is one. */
  inTransaction<T>(meta: LedgerMeta, opts: OperationKey, fn: (db: PoolClient) => Promise<T>): Promise<T> {
    return this.deps.replays.run(
      replayKey(meta, opts) ?? {
        tenantId: meta.tenant_id,
        key: undefined,
        operation: opts.operation,
        data: opts.data,
      },
      fn,
    );
  }

  /**
   * The refund of a purchase, decided under the account's row lock after a settle. A `reference`
   * names the refunded purchase: one of this member on this card caps the deduction by what it
   * earned minus what refunds on it already deducted, and its own lot gives first, pending or
   * not; one of another member or on another card is refused with refund_reference_mismatch (it
   * would take from the wrong account; nothing is written); an unknown one earned nothing, so it
   * deducts nothing unless the amount is `explicit` (cashback_to_deduct / points_to_deduct). The
   * rest comes from the spendable lots, soonest-expiring first; the spendable balance caps it.
   */
  async refund(db: PoolClient, k: AccountKey, e: RefundOrder): Promise<RefundChange> {
    const before = await this.settleLocked(db, k, e.at, true);
    if (before === undefined) throw new Error('the account a refund opened is missing');
    const { cap, lot } = await refundTerms(db, k, e.reference, e.explicit);
    const plan = planRefund(e.requested, cap, lot ?? null, before.balance);
    if (lot && plan.fromPurchaseLot > 0) await takeFromLot(db, lot.id, plan.fromPurchaseLot);
    if (plan.fromBalance > 0) await takeFromLots(db, k, plan.fromBalance);
    const fromPending = lot?.pending ? plan.fromPurchaseLot : 0;
    const balance = before.balance - (plan.deducted - fromPending);
    await setAmounts(db, k, { balance, pending: before.pending - fromPending }, e.at);
    const entry = await appendJournal(db, k, {
      event: e.event,
      amount: -plan.deducted,
      balanceAfter: balance,
      purchaseCents: e.refundCents,
      reference: e.reference,
      at: e.at,
    });
    return { entry, previous: before.balance, balance, plan, fromPending };
  }

  /** What a refund would do now, without a lock or a write (quotes). */
  async refundQuote(
    k: AccountKey,
    e: { requested: number; explicit: boolean; reference?: string },
  ): Promise<{ account: AccountView; plan: RefundPlan; fromPending: number }> {
    const account = (await this.view(k)) ?? EMPTY_ACCOUNT;
    const { cap, lot } = await refundTerms(this.deps.pool, k, e.reference, e.explicit);
    const plan = planRefund(e.requested, cap, lot ?? null, account.balance);
    return { account, plan, fromPending: lot?.pending ? plan.fromPurchaseLot : 0 };
  }

  /**
   * The member's account on the card (spendable, pending, held, next expiries). The member is
   * checked with the member directory first (remembered members need no message to identity), so
   * an unknown, foreign or erased member answers member_not_found even where an account exists,
   * and a known one without an account an empty account.
   */
  async accountOf(meta: LedgerMeta, cardId: number, memberId: number): Promise<AccountView> {
    await this.deps.members.mustExist(meta, memberId);
    return (await this.view({ tenantId: meta.tenant_id, cardId, memberId })) ?? EMPTY_ACCOUNT;
  }

  /** The account if the member has one on the card (no identity call). */
  findAccount(k: AccountKey): Promise<AccountView | undefined> {
    return this.view(k);
  }

  /** A history page of a member identity knows (an empty one without an account on the card). */
  async historyPage(
    meta: LedgerMeta,
    cardId: number,
    memberId: number,
    limit: number,
    offset: number,
  ): Promise<{ entries: JournalEntry[]; total: number }> {
    const { pool, clock } = this.deps;
    // An erased member's history is not shown, even though its rows stay in the books.
    await this.deps.members.mustExist(meta, memberId);
    let page = await journalPage(pool, cardId, memberId, limit, offset);
    if (page && isDue(page, clock.now())) {
      await this.settle({ tenantId: meta.tenant_id, cardId, memberId });
      page = await journalPage(pool, cardId, memberId, limit, offset);
    }
    if (!page) return { entries: [], total: 0 };
    // Imported past transactions come after the journal's rows (they are older than the programme here).
    const entries = page.entries;
    if (page.imported > 0 && entries.length < limit)
      entries.push(
        ...(await importedHistoryPage(
          pool,
          cardId,
          memberId,
          limit - entries.length,
          Math.max(0, offset - page.total),
        )),
      );
    return { entries, total: page.total + page.imported };
  }

  /**
   * The member of a refund, as the member directory knows it (a remembered member needs no message
   * to identity); an erased member is not found, even with an account on the card.
   */
  async refundMember(meta: LedgerMeta, d: { member_id?: number; email?: string; phone?: string }): Promise<number> {
    return (await this.deps.members.resolve(meta, memberBy(d))).member.id;
  }

  /**
   * A write naming a member who is gone since (erased, or merged into another) answers 404, unless
   * it repeats a key whose first attempt was answered: then that answer, as for any repeat. A
   * client retrying an earn that happened just before a merge must not be told it did not.
   * Costs nothing on the way that finds the member.
   */
  async answeredBefore<A>(meta: LedgerMeta, opts: OperationKey, err: unknown): Promise<A> {
    const key = replayKey(meta, opts);
    if (key !== undefined && err instanceof AppError && err.code === 'member_not_found') {
      const first = await this.deps.replays.find<A>(key);
      if (first !== undefined) return first;
    }
    throw err;
  }

  /**
   * A service's movement retried under its key after the member it first named was merged into
   * the one it names now (the other service's merge re-pointed its record): the key's stored
   * answer when it was first asked for a source merged into this member; otherwise `err` again.
   */
  async answeredBeforeMerge<A>(
    meta: LedgerMeta,
    opts: OperationKey & { data: { member_id: number } },
    err: unknown,
  ): Promise<A> {
    const key = replayKey(meta, opts);
    if (key === undefined || !(err instanceof AppError) || err.code !== 'idempotency_key_reused') throw err;
    const { rows } = await this.deps.pool.query<{ source_member_id: string }>(
      'SELECT source_member_id FROM ledger.merged_members WHERE tenant_id = $1 AND target_member_id = $2',
      [meta.tenant_id, opts.data.member_id],
    );
    for (const { source_member_id } of rows) {
      const asFirst = { ...key, data: { ...opts.data, member_id: Number(source_member_id) } };
      const first = await this.deps.replays.find<A>(asFirst).catch(() => undefined);
      if (first !== undefined) return first;
    }
    throw err;
  }

  /** Settle one account now in a transaction of its own, if it is due (a read or a refused debit found it so). */
  private async settle(k: AccountKey): Promise<void> {
    await withTransaction(this.deps.pool, (db) => this.settleLocked(db, k, this.deps.clock.now()));
  }

  /** A posting outside any transaction, group-committed with others (posting-batcher.ts). */
  private async postAlone(how: PostingDirection, p: Posting): Promise<BalanceChange> {
    const { postings, pool } = this.deps;
    if (how.direction === 'credit' && p.movement.amount > MAX_BALANCE) throw balanceLimit(p);
    let entry = await postings.post(how.direction, p);
    // A debit on an account due a settle was not posted: settle it and post once more.
    if (entry === undefined && how.direction === 'debit' && isDue(await accountOf(pool, p.account), p.movement.at)) {
      await this.settle(p.account);
      entry = await postings.post(how.direction, p);
    }
    const posted = await postedOrRefused(how, p, entry, pool);
    this.deps.outbox.written(pool);
    return posted;
  }

  /** A posting inside the caller's transaction; its event is relayed when that commits. */
  private async postInTransaction(db: PoolClient, how: PostingDirection, p: Posting): Promise<BalanceChange> {
    if (how.direction === 'credit' && p.movement.amount > MAX_BALANCE) throw balanceLimit(p);
    if (how.direction === 'debit') await this.settleLocked(db, p.account, p.movement.at);
    const [entry] = await postMany(db, how.direction, [p]);
    const posted = await postedOrRefused(how, p, entry, db);
    this.deps.outbox.written(db);
    return posted;
  }

  /** An earn's reference is unique per card: a second earn with it is a 409 naming the first. */
  private async refusingDuplicateReferences<T>(
    ref: { cardId: number; reference: string } | undefined,
    fn: () => Promise<T>,
  ): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (ref && isUniqueViolation(err, 'journal_earn_reference')) {
        throw duplicateReference((await earnByReference(this.deps.pool, ref.cardId, ref.reference))?.id);
      }
      throw err;
    }
  }

  /** The account as a balance answers it, settled first if time has changed it. */
  private async view(k: AccountKey): Promise<AccountView | undefined> {
    let state = await accountState(this.deps.pool, k.cardId, k.memberId);
    if (isDue(state, this.deps.clock.now())) {
      await this.settle(k);
      state = await accountState(this.deps.pool, k.cardId, k.memberId);
    }
    return (
      state && { balance: state.balance, pending: state.pending, held: state.held, next_expiries: state.next_expiries }
    );
  }
}

/** The Accounting of the ledger's dependencies. */
export function accounting(deps: LedgerDeps): Accounting {
  return new Accounting(deps);
}

/** A refund as `Accounting.refund` carries it out. */
export interface RefundOrder {
  event: JournalEvent;
  requested: number;
  /** `requested` was given by the caller, not computed from the refund amount. */
  explicit: boolean;
  refundCents: number;
  reference?: string;
  at: Date;
}

/** A refund's balance change, with its plan and what it took from a pending purchase lot. */
export type RefundChange = BalanceChange & { plan: RefundPlan; fromPending: number };

/**
 * What a refund naming `reference` may take: the cap (what the purchase earned minus earlier
 * refunds on it; null: no purchase named and the amount explicit or computed) and the purchase's
 * lot. A purchase of another member, or on another card of the tenant, is refund_reference_mismatch.
 */
async function refundTerms(
  db: Queryable,
  k: AccountKey,
  reference: string | undefined,
  explicit: boolean,
): Promise<{ cap: number | null; lot: { id: number; remaining: number; pending: boolean } | undefined }> {
  if (reference === undefined) return { cap: null, lot: undefined };
  const purchase = await earnByReference(db, k.cardId, reference);
  if (purchase) {
    // A purchase of a member merged into this one since is this member's purchase now.
    if (purchase.member_id !== k.memberId && (await mergedInto(db, k.tenantId, purchase.member_id)) !== k.memberId)
      throw new AppError('refund_reference_mismatch');
    return {
      cap: purchase.amount - (await refundedOnReference(db, k, reference)),
      lot: await lotOfCredit(db, purchase.id),
    };
  }
  if (await earnedOnOtherCard(db, k.tenantId, k.cardId, reference)) throw new AppError('refund_reference_mismatch');
  return { cap: explicit ? null : 0, lot: undefined };
}
