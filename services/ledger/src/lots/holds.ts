import { AppError } from '@loyalty/contracts';
import { withTransaction, type PoolClient } from '@loyalty/runtime';
import type { Accounting, LedgerDeps, LedgerMeta } from '../accounting.ts';
import { cardOfKind } from '../card-catalogue.ts';
import type { JournalEvent } from '../domain/journal.ts';
import { journalEvents, type JournalEvents } from '../events.ts';
import { appendJournal, type AccountKey } from '../store/accounts.ts';
import { findHold, insertHold, markCaptured, markReleased, overdueHolds, type Hold } from './hold-store.ts';
import { returnToLots, takeFromLots } from './store.ts';
import { mergedInto } from '../merges/member-merge.ts';

/** The movement a claim's approval asks for (internal.points.debit under the claim's key). */
interface Capture {
  points: number;
  event: JournalEvent;
  reference?: string;
  metadata?: Record<string, unknown>;
}

function keyOf(meta: LedgerMeta): string {
  if (!meta.idempotency_key) {
    throw new AppError('validation_error', 'Holds need meta.idempotency_key (the claim key).', {
      fields: [{ field: 'idempotency_key', message: 'is required' }],
    });
  }
  return meta.idempotency_key;
}

/**
 * Holds: a claim request reserves its reward's points when it is created, so
 * no redemption can spend them while staff decide. A hold moves the amount from the spendable
 * balance to `held`, taking it from the lots soonest-expiring first (what a lot gives to a hold
 * does not expire while held); the claim's approval captures it (the `reward_claimed` journal row,
 * through internal.points.debit under the same key), a rejection or expiry releases it (back to
 * the lots it came from). Every step locks the account row first, then the hold.
 */
export class Holds {
  private readonly events: JournalEvents;

  constructor(
    private readonly deps: LedgerDeps,
    private readonly books: Accounting,
  ) {
    this.events = journalEvents(deps.outbox);
  }

  /** internal.points.hold: reserve `points` under the caller's key; the same key again answers the same hold. */
  async place(d: { card_id: number; member_id: number; points: number; expires_at: string }, meta: LedgerMeta) {
    const key = keyOf(meta);
    const card = await cardOfKind(this.deps.cards, meta.tenant_id, d.card_id, 'points');
    // A claim made for a member merged into another since: the target's points are held.
    const memberId = await mergedInto(this.deps.pool, meta.tenant_id, d.member_id);
    const k = { tenantId: meta.tenant_id, cardId: card.id, memberId };
    return withTransaction(this.deps.pool, async (db) => {
      const at = this.deps.clock.now();
      const balance = (await this.books.settleLocked(db, k, at))?.balance ?? 0;
      const existing = await findHold(db, meta.tenant_id, key, true);
      if (existing) {
        if (existing.card_id !== k.cardId || existing.member_id !== k.memberId || existing.amount !== d.points)
          throw new AppError('idempotency_key_reused');
        return { hold_id: existing.id, status: existing.status, points: existing.amount, new_balance: balance };
      }
      if (balance < d.points)
        throw new AppError('insufficient_points', undefined, { points_balance: balance, points_required: d.points });
      const hold = await insertHold(db, k, { key, amount: d.points, expiresAt: new Date(d.expires_at), at });
      await takeFromLots(db, k, d.points, hold.id);
      return { hold_id: hold.id, status: hold.status, points: hold.amount, new_balance: balance - d.points };
    });
  }

  /** internal.points.release_hold: give a held hold's points back; anything else is left as it is. */
  async release(d: { card_id: number; member_id: number }, meta: LedgerMeta) {
    const key = keyOf(meta);
    const memberId = await mergedInto(this.deps.pool, meta.tenant_id, d.member_id);
    const k = { tenantId: meta.tenant_id, cardId: d.card_id, memberId };
    return withTransaction(this.deps.pool, async (db) => {
      const at = this.deps.clock.now();
      await this.books.settleLocked(db, k, at);
      const hold = await findHold(db, meta.tenant_id, key, true);
      if (!hold || hold.card_id !== k.cardId || hold.member_id !== k.memberId) return { released: false, status: null };
      if (hold.status !== 'held') return { released: false, status: hold.status };
      await releaseHold(db, hold, at);
      // What came back may belong to lots that expired meanwhile: they expire now.
      await this.books.settleLocked(db, k, at);
      return { released: true, status: 'released' as const };
    });
  }

  /**
   * Inside the debit's transaction (its Idempotency-Key record): capture the hold placed under
   * the same key, if it is held. undefined: no hold to capture (a claim made before holds, or
   * one the ledger released when it outlived its claim), and the debit goes on as a plain one.
   */
  async captureIfHeld(db: PoolClient, meta: LedgerMeta, k: AccountKey, d: Capture, at: Date) {
    const balance = (await this.books.settleLocked(db, k, at))?.balance ?? 0;
    const hold = await findHold(db, meta.tenant_id, keyOf(meta), true);
    if (!hold || hold.status === 'released' || hold.card_id !== k.cardId || hold.member_id !== k.memberId)
      return undefined;
    const answer = (transactionId: number) => ({
      transaction_id: transactionId,
      points: hold.amount,
      previous_balance: balance,
      new_balance: balance,
    });
    if (hold.status === 'captured') return answer(hold.journal_id);
    if (hold.amount !== d.points)
      throw new AppError('idempotency_key_reused', 'The hold under this key is for another amount.');
    const entry = await appendJournal(db, k, {
      event: d.event,
      amount: -hold.amount,
      balanceAfter: balance,
      reference: d.reference,
      metadata: d.metadata,
      at,
    });
    await markCaptured(db, hold, entry.id, at);
    await this.events.record(db, {
      tenantId: k.tenantId,
      event: d.event,
      at,
      data: {
        member_id: k.memberId,
        card_id: k.cardId,
        transaction_id: entry.id,
        points: -hold.amount,
        hold_id: hold.id,
        previous_balance: balance,
        new_balance: balance,
        reference: d.reference ?? null,
        ...(d.metadata ? { metadata: d.metadata } : {}),
      },
    });
    return answer(entry.id);
  }

  /** Release the holds that outlived their expiry (a claim that never settled them); answers how many. */
  async releaseOverdue(limit: number): Promise<number> {
    const now = this.deps.clock.now();
    let released = 0;
    for (const due of await overdueHolds(this.deps.pool, now, limit)) {
      if (await this.releaseIfOverdue(due, now)) released++;
    }
    return released;
  }

  /** One overdue hold released in its own transaction, unless its claim settled it meanwhile. */
  private releaseIfOverdue(due: { tenant_id: number; key: string }, now: Date): Promise<boolean> {
    return withTransaction(this.deps.pool, async (db) => {
      const first = await findHold(db, due.tenant_id, due.key);
      if (!first) return false;
      const k = { tenantId: first.tenant_id, cardId: first.card_id, memberId: first.member_id };
      await this.books.settleLocked(db, k, now);
      const hold = await findHold(db, due.tenant_id, due.key, true);
      if (hold?.status !== 'held' || hold.expires_at.getTime() > now.getTime()) return false;
      await releaseHold(db, hold, now);
      await this.books.settleLocked(db, k, now);
      return true;
    });
  }
}

export function holdsOf(deps: LedgerDeps, books: Accounting): Holds {
  return new Holds(deps, books);
}

/** Give the hold's amount back to the lots it came from and mark it released. */
async function releaseHold(db: PoolClient, hold: Hold, at: Date): Promise<void> {
  const k = { tenantId: hold.tenant_id, cardId: hold.card_id, memberId: hold.member_id };
  await returnToLots(db, k, hold.id);
  await markReleased(db, hold, at);
}
