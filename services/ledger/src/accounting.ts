import { AppError, type Subjects } from '@loyalty/contracts';
import { isUniqueViolation, runIdempotent, type Clock, type Pool, type PoolClient } from '@loyalty/runtime';
import { refundDeduction, type BalanceWarningFigures } from './domain/formulas.ts';
import type { JournalEvent } from './domain/journal.ts';
import type { CallerMeta, IdentityClient } from './identity.ts';
import type { MemberPins } from './member-pins.ts';
import {
  appendJournal,
  credit,
  debitIfCovered,
  earnByReference,
  findBalance,
  lockAccount,
  refundedOnReference,
  setBalance,
  type AccountKey,
  type JournalEntry,
} from './store/accounts.ts';

export interface LedgerDeps {
  pool: Pool;
  subjects: Subjects;
  clock: Clock;
  identity: IdentityClient;
  pins: MemberPins;
  /** Called after a commit that wrote outbox events: the relay publishes them now. */
  eventsWritten: () => void;
}

/** The request meta the ledger reads: tenant, request id, member token, Idempotency-Key. */
export type LedgerMeta = CallerMeta & { member_id?: number; idempotency_key?: string };

export interface Posting {
  entry: JournalEntry;
  previous: number;
  balance: number;
}

export function duplicateReference(originalId: number | undefined): AppError {
  return new AppError('duplicate_reference', undefined, originalId === undefined ? {} : { original_transaction_id: originalId });
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
     * Run a mutating operation in one transaction with its Idempotency-Key record (Stripe style:
     * replay on the same key and parameters, 409 on other parameters). `source` keeps keys of
     * HTTP clients and of other services apart. `earnReference` turns a lost race on an earn's
     * reference into a 409 naming the original transaction.
     */
    async mutate<T>(
      meta: LedgerMeta,
      opts: { operation: string; data: unknown; source: 'http' | 'service'; earnReference?: { cardId: number; reference: string } },
      fn: (db: PoolClient) => Promise<T>,
    ): Promise<T> {
      const key = meta.idempotency_key === undefined ? undefined : `${opts.source}:${meta.idempotency_key}`;
      try {
        const result = await runIdempotent(pool, { table: 'ledger.idempotency_keys', tenantId: meta.tenant_id, key, operation: opts.operation, data: opts.data }, fn);
        deps.eventsWritten();
        return result;
      } catch (err) {
        if (opts.earnReference && isUniqueViolation(err, 'journal_earn_reference')) {
          throw duplicateReference((await earnByReference(pool, opts.earnReference.cardId, opts.earnReference.reference))?.id);
        }
        throw err;
      }
    },

    /** Credit an earn; its reference (if any) must not have been used by an earn on the card. */
    async earn(
      db: PoolClient,
      k: AccountKey,
      e: { event: JournalEvent; amount: number; purchaseCents: number; reference?: string; metadata?: Record<string, unknown>; at: Date },
    ): Promise<Posting> {
      if (e.reference !== undefined) {
        const used = await earnByReference(db, k.cardId, e.reference);
        if (used) throw duplicateReference(used.id);
      }
      const { previous, balance } = await credit(db, k, e.amount, e.at);
      const entry = await appendJournal(db, k, { ...e, balanceAfter: balance });
      return { entry, previous, balance };
    },

    /** Credit without a purchase (a referral bonus). */
    async credit(db: PoolClient, k: AccountKey, e: { event: JournalEvent; amount: number; reference?: string; metadata?: Record<string, unknown>; at: Date }): Promise<Posting> {
      const { previous, balance } = await credit(db, k, e.amount, e.at);
      const entry = await appendJournal(db, k, { ...e, balanceAfter: balance });
      return { entry, previous, balance };
    },

    /** Debit only when the balance covers it; undefined (and nothing written) otherwise. */
    async debit(
      db: PoolClient,
      k: AccountKey,
      e: { event: JournalEvent; amount: number; reference?: string; rewardId?: number; metadata?: Record<string, unknown>; at: Date },
    ): Promise<Posting | undefined> {
      const moved = await debitIfCovered(db, k, e.amount, e.at);
      if (!moved) return undefined;
      const entry = await appendJournal(db, k, { ...e, amount: -e.amount, balanceAfter: moved.balance });
      return { entry, ...moved };
    },

    /**
     * A refund's deduction, decided under the account's row lock: capped by what the purchase named
     * by `reference` earned minus what refunds on it already deducted, and by the balance.
     */
    async refund(
      db: PoolClient,
      k: AccountKey,
      e: { event: JournalEvent; requested: number; refundCents: number; reference?: string; at: Date },
    ): Promise<Posting & { deducted: number; warning: BalanceWarningFigures | null }> {
      const previous = await lockAccount(db, k, e.at);
      let cap: number | null = null;
      if (e.reference !== undefined) {
        const purchase = await earnByReference(db, k.cardId, e.reference);
        if (purchase && purchase.member_id === k.memberId) cap = purchase.amount - (await refundedOnReference(db, k, e.reference));
      }
      const { deducted, warning } = refundDeduction(e.requested, cap, previous);
      const balance = previous - deducted;
      if (deducted > 0) await setBalance(db, k, balance, e.at);
      const entry = await appendJournal(db, k, { event: e.event, amount: -deducted, balanceAfter: balance, purchaseCents: e.refundCents, reference: e.reference, at: e.at });
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

    /** The member of a refund: an account on the card proves a member_id; otherwise identity decides. */
    async refundMember(meta: LedgerMeta, cardId: number, d: { member_id?: number; email?: string; phone?: string }): Promise<number> {
      if (d.member_id !== undefined && (await findBalance(pool, cardId, d.member_id)) !== undefined) return d.member_id;
      return (await deps.identity.resolve(meta, memberBy(d))).member.id;
    },
  };
}
export type Accounting = ReturnType<typeof accounting>;
