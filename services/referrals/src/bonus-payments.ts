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
import { bonusCredits, isPurchaseEarn, type BonusParty, type Referral } from './domain/referral.ts';
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

/** Pays a due referral; `alsoInTx` writes what must commit with the completion (apply's idempotency record). */
type Pay = (
  meta: ServiceMeta,
  r: Referral,
  alsoInTx?: (db: PoolClient, done: Referral) => Promise<void>,
) => Promise<Referral>;

/** Why a payment failed, for the log: an AppError's code, else the error's message. */
function reasonOf(err: unknown): string {
  if (err instanceof AppError) return err.code;
  return err instanceof Error ? err.message : String(err);
}

/**
 * Paying a due referral: credit both parties through the ledger under the deterministic keys
 * `referral:<id>:referrer` / `referral:<id>:referee`, then mark it completed with a
 * `referral_completed` event in one transaction. Safe to run any number of times, from any
 * replica: the ledger replays a credit it has already made, and only one completion commits.
 */
export function bonusPayments(deps: PaymentDeps) {
  const pay = payer(deps);
  return {
    pay,
    /** Finish payments left due by a crash or a failed call. Returns how many were completed. */
    sweep: (retryAfterMs: number, batch = 50) => sweep(deps, pay, retryAfterMs, batch),
    ...firstPurchases(deps, pay),
  };
}
export type BonusPayments = ReturnType<typeof bonusPayments>;

function payer(deps: PaymentDeps): Pay {
  const { pool, clients, outbox, clock } = deps;

  /**
   * Credit each party's bonus, but none to a party erased meanwhile (a referral waiting for the
   * referee's first purchase outlives its referrer's erasure): its bonus is withheld. A party
   * merged away is credited: the ledger lands it on the member it was merged into.
   */
  async function credit(meta: ServiceMeta, r: Referral) {
    const tx: { referrer?: number; referee?: number } = {};
    const withheld: BonusParty[] = [];
    const credits = bonusCredits(r);
    const erased =
      credits.length === 0
        ? new Set<number>()
        : await clients.erased(
            meta,
            credits.map((c) => c.memberId),
          );
    for (const c of credits) {
      if (erased.has(c.memberId)) {
        withheld.push(c.party);
        continue;
      }
      const reply = await clients.creditBonus(meta, c.key, {
        cardId: r.card_id,
        memberId: c.memberId,
        points: c.points,
        referralId: r.id,
        party: c.party,
      });
      tx[c.party] = reply.transaction_id;
    }
    return { tx, withheld };
  }

  /** Completion in the caller's transaction, with its event (a withheld bonus is recorded as 0). */
  async function complete(db: Queryable, r: Referral, paid: Awaited<ReturnType<typeof credit>>): Promise<Referral> {
    const done = await completeReferral(db, r.id, paid.tx, clock.now(), paid.withheld);
    if (!done) return (await findReferral(db, r.id)) ?? r; // someone else completed it first
    await outbox.record(db, {
      type: 'referral_completed',
      tenantId: done.tenant_id,
      data: referralEventData(done),
      occurredAt: clock.now(),
    });
    return done;
  }

  return async (meta, r, alsoInTx) => {
    const paid = await credit(meta, r);
    const done = await withTransaction(pool, async (db) => {
      const d = await complete(db, r, paid);
      await alsoInTx?.(db, d);
      return d;
    });
    return done;
  };
}

async function sweep(deps: PaymentDeps, pay: Pay, retryAfterMs: number, batch: number): Promise<number> {
  const now = deps.clock.now();
  const stale = await leaseStalePayments(deps.pool, new Date(now.getTime() - retryAfterMs), now, batch);
  let completed = 0;
  for (const r of stale) {
    try {
      const done = await pay(backgroundMeta(r.tenant_id, 'sweeper'), r);
      if (done.status === 'completed') completed++;
      deps.log.info({ referral_id: r.id }, 'interrupted referral bonus payment finished');
    } catch (err) {
      deps.log.warn({ referral_id: r.id, err: reasonOf(err) }, 'referral bonus payment failed; will retry');
    }
  }
  return completed;
}

/** Referrals that wait for the referee's first purchase: the ledger's earns make them due. */
function firstPurchases(deps: PaymentDeps, pay: Pay) {
  const { pool, clock, log } = deps;
  return {
    /**
     * Most points earns concern no waiting referral: the consumer asks about every earn delivered
     * together in one indexed read and acknowledges those without a transaction (a commit per earn,
     * then a read per earn, were most of what each points earn cost behind the earn itself).
     */
    async awaitPayment(events: DomainEvent[]): Promise<boolean[]> {
      const accounts = events.map(purchaseAccount);
      const asked = accounts.filter((a) => a !== null);
      // One answer per account asked, in order.
      const answers = (await awaitingFirstPurchase(pool, asked))[Symbol.iterator]();
      return accounts.map((a) => a !== null && answers.next().value === true);
    },

    /**
     * The ledger's points_earned event, in the consumer's transaction (which also records the
     * event id, so a redelivery does nothing): a referral waiting for the referee's first purchase
     * becomes due with that commit. It is paid after the commit, never inside the transaction (the
     * ledger is another service); if paying fails or the process dies first, it stays due and the
     * sweeper finishes it.
     */
    async onPointsEarned(event: DomainEvent, db: PoolClient): Promise<void> {
      const account = purchaseAccount(event);
      if (!account) return;
      const due = await markPaymentDue(db, account.tenantId, account.cardId, account.memberId, clock.now());
      if (!due) return;
      afterCommit(db, () => {
        pay(backgroundMeta(event.tenant_id, 'first-purchase'), due).catch((err: unknown) =>
          log.warn(
            { referral_id: due.id, err: reasonOf(err) },
            'first-purchase referral bonus not paid yet; the sweeper retries',
          ),
        );
      });
    },
  };
}

/** The account of a points_earned event that is a purchase (a first purchase can complete a referral); null otherwise. */
function purchaseAccount(event: DomainEvent): EarnAccount | null {
  const { member_id: memberId, card_id: cardId } = event.data;
  if (typeof memberId !== 'number' || typeof cardId !== 'number' || !isPurchaseEarn(event.data)) return null;
  return { tenantId: event.tenant_id, cardId, memberId };
}
