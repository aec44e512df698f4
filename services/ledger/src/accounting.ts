import { AppError, type ServiceMeta } from '@loyalty/contracts';
import {
  isUniqueViolation,
  type Clock,
  type Outbox,
  type Pool,
  type PoolClient,
  type Queryable,
  type ReplayStore,
} from '@loyalty/runtime';
import { refundDeduction, type BalanceWarningFigures } from './domain/formulas.ts';
import type { JournalEvent } from './domain/journal.ts';
import { fromCents, MAX_BALANCE } from './domain/money.ts';
import type { CardCache } from './card-cache.ts';
import type { MemberDirectory } from './clients.ts';
import type { MemberPins } from './member-pins.ts';
import type { PostingBatcher } from './posting-batcher.ts';
import {
  appendJournal,
  earnByReference,
  earnedOnOtherCard,
  findBalance,
  journalPage,
  lockAccount,
  postMany,
  refundedOnReference,
  setBalance,
  type AccountKey,
  type JournalEntry,
  type PostedEntry,
  type Posting,
} from './store/accounts.ts';

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
}

/** The request meta the ledger reads: tenant, request id, member token, Idempotency-Key. */
export type LedgerMeta = ServiceMeta & { member_id?: number };

export interface BalanceChange {
  entry: JournalEntry;
  previous: number;
  balance: number;
}

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

type Direction = 'credit' | 'debit';

/** Which operation a change is, for its Idempotency-Key record: keys of HTTP clients and of other services are kept apart. */
interface OperationKey {
  operation: string;
  data: unknown;
  source: 'http' | 'service';
}

function replayKey(meta: LedgerMeta, opts: OperationKey) {
  if (meta.idempotency_key === undefined) return undefined;
  return {
    tenantId: meta.tenant_id,
    key: `${opts.source}:${meta.idempotency_key}`,
    operation: opts.operation,
    data: opts.data,
  };
}

function change(entry: PostedEntry | undefined): BalanceChange | undefined {
  return entry && { entry, previous: entry.balance_after - entry.amount, balance: entry.balance_after };
}

/**
 * Balance changes shared by cashback (amounts in cents) and points (amounts in points). Each runs
 * inside the caller's transaction and writes the balance change and its journal row together.
 */
export function accounting(deps: LedgerDeps) {
  const { pool } = deps;

  /**
   * A credit that would take the balance past MAX_BALANCE (money.ts). One larger than the maximum
   * by itself is refused before it reaches the database (it could not even be an int8 there).
   */
  function balanceLimit(p: Posting): AppError {
    return new AppError('balance_limit_exceeded', undefined, {
      max_balance: p.e.unit === 'cents' ? fromCents(MAX_BALANCE) : MAX_BALANCE,
    });
  }

  /** The posting's change; a credit the statement did not write was refused by the balance limit. */
  function postedOrRefused(p: Posting & { direction: Direction }, entry: PostedEntry | undefined) {
    if (entry === undefined && p.direction === 'credit') throw balanceLimit(p);
    return change(entry);
  }

  /** A posting outside any transaction, group-committed with others (posting-batcher.ts). */
  async function postAlone(p: Posting & { direction: Direction }): Promise<BalanceChange | undefined> {
    if (p.direction === 'credit' && p.m.amount > MAX_BALANCE) throw balanceLimit(p);
    const posted = postedOrRefused(p, await deps.postings.post(p.direction, p));
    if (posted) deps.outbox.written(pool);
    return posted;
  }

  /** A posting inside the caller's transaction; its event is relayed when that commits. */
  async function postInTransaction(
    db: PoolClient,
    p: Posting & { direction: Direction },
  ): Promise<BalanceChange | undefined> {
    if (p.direction === 'credit' && p.m.amount > MAX_BALANCE) throw balanceLimit(p);
    const posted = postedOrRefused(p, (await postMany(db, p.direction, [p]))[0]);
    if (posted) deps.outbox.written(db);
    return posted;
  }

  /** An earn's reference is unique per card: a second earn with it is a 409 naming the first. */
  async function refusingDuplicateReferences<T>(
    ref: { cardId: number; reference: string } | undefined,
    fn: () => Promise<T>,
  ): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (ref && isUniqueViolation(err, 'journal_earn_reference')) {
        throw duplicateReference((await earnByReference(pool, ref.cardId, ref.reference))?.id);
      }
      throw err;
    }
  }

  return {
    /**
     * One posting (a credit, or a debit only when the balance covers it) with its journal row and
     * event, answered by `reply`. Without an Idempotency-Key it is posted on its own: it needs no
     * transaction and shares a group-committed statement with the postings of the same moment.
     * With a key it is posted inside the transaction that holds the key's record, and the reply is
     * stored there (a retry replays it). `reply` gets undefined for a debit the balance did not
     * cover (nothing was written) and reads, if it must, with the `db` it is given. A credit past
     * MAX_BALANCE writes nothing and throws balance_limit_exceeded.
     */
    async posting<T>(
      meta: LedgerMeta,
      opts: OperationKey & { earnReference?: { cardId: number; reference: string } },
      make: (at: Date) => Posting & { direction: Direction },
      reply: (change: BalanceChange | undefined, db: Queryable) => Promise<T> | T,
    ): Promise<T> {
      return refusingDuplicateReferences(opts.earnReference, async () => {
        const key = replayKey(meta, opts);
        if (key === undefined) return reply(await postAlone(make(deps.clock.now())), pool);
        return deps.replays.run(key, async (db) => reply(await postInTransaction(db, make(deps.clock.now())), db));
      });
    },

    /** A change of several statements in one transaction, with the key's record when there is one. */
    inTransaction<T>(meta: LedgerMeta, opts: OperationKey, fn: (db: PoolClient) => Promise<T>): Promise<T> {
      return deps.replays.run(
        replayKey(meta, opts) ?? {
          tenantId: meta.tenant_id,
          key: undefined,
          operation: opts.operation,
          data: opts.data,
        },
        fn,
      );
    },

    /**
     * A refund's deduction, decided under the account's row lock. A `reference` names the refunded
     * purchase: one of this member on this card caps the deduction by what it earned minus what
     * refunds on it already deducted; one of another member or on another card is refused with
     * refund_reference_mismatch (it would take from the wrong account; nothing is written); an
     * unknown one earned nothing, so it deducts nothing unless the amount is `explicit`
     * (cashback_to_deduct / points_to_deduct). The balance caps every deduction.
     */
    async refund(
      db: Queryable,
      k: AccountKey,
      e: {
        event: JournalEvent;
        requested: number;
        /** `requested` was given by the caller, not computed from the refund amount. */
        explicit: boolean;
        refundCents: number;
        reference?: string;
        at: Date;
      },
    ): Promise<BalanceChange & { deducted: number; warning: BalanceWarningFigures | null }> {
      const previous = await lockAccount(db, k, e.at);
      let cap: number | null = null;
      if (e.reference !== undefined) {
        const purchase = await earnByReference(db, k.cardId, e.reference);
        if (purchase) {
          if (purchase.member_id !== k.memberId) throw new AppError('refund_reference_mismatch');
          cap = purchase.amount - (await refundedOnReference(db, k, e.reference));
        } else if (await earnedOnOtherCard(db, k.tenantId, k.cardId, e.reference)) {
          throw new AppError('refund_reference_mismatch');
        } else if (!e.explicit) {
          cap = 0;
        }
      }
      const { deducted, warning } = refundDeduction(e.requested, cap, previous);
      const balance = previous - deducted;
      if (deducted > 0) await setBalance(db, k, balance, e.at);
      const entry = await appendJournal(db, k, {
        event: e.event,
        amount: -deducted,
        balanceAfter: balance,
        purchaseCents: e.refundCents,
        reference: e.reference,
        at: e.at,
      });
      return { entry, previous, balance, deducted, warning };
    },

    /**
     * The member's balance on the card. Without an account the member is asked of identity, so an
     * unknown or foreign member answers member_not_found and a known one a zero balance.
     */
    async balanceOf(meta: LedgerMeta, cardId: number, memberId: number): Promise<number> {
      const balance = await findBalance(pool, cardId, memberId);
      if (balance !== undefined) return balance;
      await deps.members.mustExist(meta, memberId);
      return 0;
    },

    /** A history page; a member without an account on the card gets an empty one if identity knows it. */
    async historyPage(
      meta: LedgerMeta,
      cardId: number,
      memberId: number,
      limit: number,
      offset: number,
    ): Promise<{ entries: JournalEntry[]; total: number }> {
      const page = await journalPage(pool, cardId, memberId, limit, offset);
      if (page) return page;
      await deps.members.mustExist(meta, memberId);
      return { entries: [], total: 0 };
    },

    /** The member of a refund: an account on the card proves a member_id; otherwise identity decides. */
    async refundMember(
      meta: LedgerMeta,
      cardId: number,
      d: { member_id?: number; email?: string; phone?: string },
    ): Promise<number> {
      if (d.member_id !== undefined && (await findBalance(pool, cardId, d.member_id)) !== undefined) return d.member_id;
      return (await deps.members.resolve(meta, memberBy(d))).member.id;
    },
  };
}
export type Accounting = ReturnType<typeof accounting>;
