import { AppError, type Subjects } from '@loyalty/contracts';
import { isUniqueViolation, runIdempotent, type Clock, type Pool, type Queryable } from '@loyalty/runtime';
import { refundDeduction, type BalanceWarningFigures } from './domain/formulas.ts';
import type { JournalEvent } from './domain/journal.ts';
import type { CardCache } from './card-cache.ts';
import type { CallerMeta, IdentityClient } from './identity.ts';
import type { MemberPins } from './member-pins.ts';
import type { PostingBatcher } from './posting-batcher.ts';
import {
  appendJournal,
  earnByReference,
  findBalance,
  journalPage,
  lockAccount,
  post,
  refundedOnReference,
  setBalance,
  type AccountKey,
  type JournalEntry,
  type Movement,
  type PostingEvent,
} from './store/accounts.ts';

export interface LedgerDeps {
  pool: Pool;
  subjects: Subjects;
  clock: Clock;
  identity: IdentityClient;
  cards: CardCache;
  pins: MemberPins;
  /** Group commit of the postings made outside a transaction. */
  postings: PostingBatcher;
  /** Called after a commit that wrote outbox events: the relay publishes them now. */
  eventsWritten: () => void;
}

/** The request meta the ledger reads: tenant, request id, member token, Idempotency-Key. */
export type LedgerMeta = CallerMeta & { member_id?: number; idempotency_key?: string };

export interface BalanceChange {
  entry: JournalEntry;
  previous: number;
  balance: number;
}

export function duplicateReference(originalId: number | undefined): AppError {
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

/**
 * Balance changes shared by cashback (amounts in cents) and points (amounts in points). Each runs
 * inside the caller's transaction and writes the balance change and its journal row together.
 */
export function accounting(deps: LedgerDeps) {
  const { pool } = deps;

  return {
    /**
     * Run a mutating operation with its Idempotency-Key record in one transaction (Stripe style:
     * replay on the same key and parameters, 409 on other parameters). `source` keeps keys of
     * HTTP clients and of other services apart. `earnReference` turns a lost race on an earn's
     * reference into a 409 naming the original transaction. `oneStatement`: `fn` writes with a
     * single statement (a posting), so without a key it needs no transaction around it and runs
     * in one round trip; anything it reads after that statement is not part of the change.
     */
    async mutate<T>(
      meta: LedgerMeta,
      opts: {
        operation: string;
        data: unknown;
        source: 'http' | 'service';
        earnReference?: { cardId: number; reference: string };
        oneStatement?: boolean;
      },
      fn: (db: Queryable) => Promise<T>,
    ): Promise<T> {
      const key = meta.idempotency_key === undefined ? undefined : `${opts.source}:${meta.idempotency_key}`;
      try {
        const result =
          key === undefined && opts.oneStatement
            ? await fn(pool)
            : await runIdempotent(
                pool,
                {
                  table: 'ledger.idempotency_keys',
                  tenantId: meta.tenant_id,
                  key,
                  operation: opts.operation,
                  data: opts.data,
                },
                fn,
              );
        deps.eventsWritten();
        return result;
      } catch (err) {
        if (opts.earnReference && isUniqueViolation(err, 'journal_earn_reference')) {
          throw duplicateReference(
            (await earnByReference(pool, opts.earnReference.cardId, opts.earnReference.reference))?.id,
          );
        }
        throw err;
      }
    },

    /**
     * Credit (an earn, a bonus) or debit (only when the balance covers it) an account with its
     * journal row and its event, in one statement (shared with other postings when `db` is the
     * pool). An earn's reference is unique per card (journal_earn_reference): a second earn with it
     * fails as a whole and `mutate` answers 409.
     * undefined: a debit the balance did not cover; nothing was written.
     */
    async post(
      db: Queryable,
      k: AccountKey,
      direction: 'credit' | 'debit',
      m: Movement,
      event: PostingEvent,
    ): Promise<BalanceChange | undefined> {
      // Outside a transaction (`mutate` passed the pool itself) postings share statements.
      const entry =
        db === pool ? await deps.postings.post(direction, { k, m, e: event }) : await post(db, k, direction, m, event);
      if (!entry) return undefined;
      return { entry, previous: entry.balance_after - entry.amount, balance: entry.balance_after };
    },

    /**
     * A refund's deduction, decided under the account's row lock: capped by what the purchase named
     * by `reference` earned minus what refunds on it already deducted, and by the balance.
     */
    async refund(
      db: Queryable,
      k: AccountKey,
      e: { event: JournalEvent; requested: number; refundCents: number; reference?: string; at: Date },
    ): Promise<BalanceChange & { deducted: number; warning: BalanceWarningFigures | null }> {
      const previous = await lockAccount(db, k, e.at);
      let cap: number | null = null;
      if (e.reference !== undefined) {
        const purchase = await earnByReference(db, k.cardId, e.reference);
        if (purchase && purchase.member_id === k.memberId)
          cap = purchase.amount - (await refundedOnReference(db, k, e.reference));
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
      await deps.identity.mustExist(meta, memberId);
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
      await deps.identity.mustExist(meta, memberId);
      return { entries: [], total: 0 };
    },

    /** The member of a refund: an account on the card proves a member_id; otherwise identity decides. */
    async refundMember(
      meta: LedgerMeta,
      cardId: number,
      d: { member_id?: number; email?: string; phone?: string },
    ): Promise<number> {
      if (d.member_id !== undefined && (await findBalance(pool, cardId, d.member_id)) !== undefined) return d.member_id;
      return (await deps.identity.resolve(meta, memberBy(d))).member.id;
    },
  };
}
export type Accounting = ReturnType<typeof accounting>;
