import { randomUUID } from 'node:crypto';
import { AppError, type DomainEvent, type ServiceMeta } from '@loyalty/contracts';
import {
  afterCommit,
  withTransaction,
  type Clock,
  type Logger,
  type Outbox,
  type Pool,
  type PoolClient,
  type Queryable,
} from '@loyalty/runtime';
import { bonusCredits, isPurchaseEarn, type Referral } from './domain/referral.ts';
import type { ReferralsClients } from './clients.ts';
import {
  awaitingFirstPurchase,
  completeReferral,
  type EarnAccount,
  findReferral,
  leaseStalePayments,
  markPaymentDue,
} from './store/referrals.ts';

export interface PaymentDeps {
  pool: Pool;
  clients: ReferralsClients;
  outbox: Outbox;
  clock: Clock;
  log: Logger;
}

export function referralEventData(r: Referral) {
  return {
    referral_id: r.id,
    card_id: r.card_id,
    referrer_id: r.referrer_id,
    referee_id: r.referee_id,
    referrer_bonus: r.referrer_bonus,
    referee_bonus: r.referee_bonus,
    status: r.status,
  };
}

/** Meta of work that no HTTP request started (sweeper, event consumer). */
function backgroundMeta(tenantId: number, what: string): ServiceMeta {
  return { request_id: `referrals-${what}-${randomUUID()}`, tenant_id: tenantId };
}

/**
 * Paying a due referral: credit both parties through the ledger under the deterministic keys
 * `referral:<id>:referrer` / `referral:<id>:referee`, then mark it completed with a
 * `referral_completed` event in one transaction. Safe to run any number of times, from any
 * replica: the ledger replays a credit it has already made, and only one completion commits.
 */
export function bonusPayments(deps: PaymentDeps) {
  const { pool, clients, outbox, clock, log } = deps;

  async function credit(meta: ServiceMeta, r: Referral) {
    const tx: { referrer?: number; referee?: number } = {};
    for (const c of bonusCredits(r)) {
      const reply = await clients.creditBonus(meta, c.key, {
        cardId: r.card_id,
        memberId: c.memberId,
        points: c.points,
        referralId: r.id,
        party: c.party,
      });
      tx[c.party] = reply.transaction_id;
    }
    return tx;
  }

  /** Completion in the caller's transaction, with its event. */
  async function complete(db: Queryable, r: Referral, tx: { referrer?: number; referee?: number }): Promise<Referral> {
    const done = await completeReferral(db, r.id, tx, clock.now());
    if (!done) return (await findReferral(db, r.id)) ?? r; // someone else completed it first
    await outbox.record(db, {
      type: 'referral_completed',
      tenantId: done.tenant_id,
      data: referralEventData(done),
      occurredAt: clock.now(),
    });
    return done;
  }

  /** `alsoInTx` writes what must commit with the completion (apply's idempotency record). */
  async function pay(
    meta: ServiceMeta,
    r: Referral,
    alsoInTx?: (db: PoolClient, done: Referral) => Promise<void>,
  ): Promise<Referral> {
    const tx = await credit(meta, r);
    const done = await withTransaction(pool, async (db) => {
      const d = await complete(db, r, tx);
      await alsoInTx?.(db, d);
      return d;
    });
    return done;
  }

  /** Finish payments left due by a crash or a failed call. Returns how many were completed. */
  async function sweep(retryAfterMs: number, batch = 50): Promise<number> {
    const now = clock.now();
    const stale = await leaseStalePayments(pool, new Date(now.getTime() - retryAfterMs), now, batch);
    let completed = 0;
    for (const r of stale) {
      try {
        const done = await pay(backgroundMeta(r.tenant_id, 'sweeper'), r);
        if (done.status === 'completed') completed++;
        log.info({ referral_id: r.id }, 'interrupted referral bonus payment finished');
      } catch (err) {
        log.warn(
          { referral_id: r.id, err: err instanceof AppError ? err.code : (err as Error).message },
          'referral bonus payment failed; will retry',
        );
      }
    }
    return completed;
  }

  /**
   * Most points earns concern no waiting referral: the consumer asks about every earn delivered
   * together in one indexed read and acknowledges those without a transaction (a commit per earn,
   * then a read per earn, were most of what each points earn cost behind the earn itself).
   */
  async function awaitPayment(events: DomainEvent[]): Promise<boolean[]> {
    const accounts = events.map(purchaseAccount);
    const asked = accounts.filter((a) => a !== null);
    const answers = await awaitingFirstPurchase(pool, asked);
    let k = 0;
    return accounts.map((a) => (a === null ? false : answers[k++]!));
  }

  /**
   * The ledger's points_earned event, in the consumer's transaction (which also records the
   * event id, so a redelivery does nothing): a referral waiting for the referee's first purchase
   * becomes due with that commit. It is paid after the commit, never inside the transaction (the
   * ledger is another service); if paying fails or the process dies first, it stays due and the
   * sweeper finishes it.
   */
  async function onPointsEarned(event: DomainEvent, db: PoolClient): Promise<void> {
    const account = purchaseAccount(event);
    if (!account) return;
    const due = await markPaymentDue(db, account.tenantId, account.cardId, account.memberId, clock.now());
    if (!due) return;
    afterCommit(db, () => {
      pay(backgroundMeta(event.tenant_id, 'first-purchase'), due).catch((err: unknown) =>
        log.warn(
          { referral_id: due.id, err: err instanceof AppError ? err.code : (err as Error).message },
          'first-purchase referral bonus not paid yet; the sweeper retries',
        ),
      );
    });
  }

  return { pay, sweep, onPointsEarned, awaitPayment };
}
export type BonusPayments = ReturnType<typeof bonusPayments>;

/** The account of a points_earned event that is a purchase (a first purchase can complete a referral); null otherwise. */
function purchaseAccount(event: DomainEvent): EarnAccount | null {
  const data = event.data as { member_id?: unknown; card_id?: unknown; event?: unknown };
  if (typeof data.member_id !== 'number' || typeof data.card_id !== 'number' || !isPurchaseEarn(data)) return null;
  return { tenantId: event.tenant_id, cardId: data.card_id, memberId: data.member_id };
}
