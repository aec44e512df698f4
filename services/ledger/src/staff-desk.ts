import { AppError, type StaffMeta } from '@loyalty/contracts';
import { auditActor, recordAudit, type Queryable } from '@loyalty/runtime';
import { bonusTierMove } from './tiers/moves.ts';
import type { RuledCard } from './card-cache.ts';
import type { Accounting, BalanceChange, LedgerDeps, LedgerMeta, PostingOptions } from './accounting.ts';
import { balanceFields } from './domain/balance-view.ts';
import { fromCents, toCents } from './domain/money.ts';
import { journalEvents, type JournalEvents } from './events.ts';
import { lotTerms } from './lots/terms.ts';
import { lotEventFields } from './lots/views.ts';
import type { cashbackProduct } from './products/cashback.ts';
import type { PointsProduct } from './products/points.ts';
import { findBalance, type Posting } from './store/accounts.ts';
import { listCards } from './store/cards.ts';

interface Products {
  points: PointsProduct;
  cashback: ReturnType<typeof cashbackProduct>;
}

/** A manager's credit or debit of a member's balance, with its reason. */
interface AdjustRequest {
  card_id: number;
  member_id: number;
  direction: 'add' | 'deduct';
  points?: number;
  amount?: number;
  reason: string;
}

/** An adjustment decided: the card, its amount in the card's unit and the amounts the audit and event show. */
interface Adjustment {
  d: AdjustRequest;
  card: RuledCard;
  points: boolean;
  units: number;
  moved: { points: number } | { amount: number };
}

/**
 * The ledger's part of the staff console: the tenant's cards, a member's balances (the same
 * answers as the public balance operations, so whatever they carry, pending, held and expiring
 * amounts included, shows here too) and history, and managers' adjustments.
 */
export class StaffDesk {
  private readonly events: JournalEvents;

  constructor(
    private readonly deps: LedgerDeps,
    private readonly books: Accounting,
    private readonly products: Products,
  ) {
    this.events = journalEvents(deps.outbox);
  }

  async cards(meta: StaffMeta) {
    const cards = await listCards(this.deps.pool, meta.tenant_id);
    return {
      cards: cards.map((c) => ({
        id: c.id,
        name: c.name,
        unique_identifier: c.unique_identifier,
        reward_system: c.reward_system,
        currency: c.currency,
      })),
    };
  }

  async balances(d: { member_id: number }, meta: StaffMeta) {
    await this.deps.members.mustExist(meta, d.member_id);
    const cards = await listCards(this.deps.pool, meta.tenant_id);
    const balances = await Promise.all(
      cards.map(async (card) => {
        const q = { card_id: card.id, member_id: d.member_id };
        const answer =
          card.reward_system === 'points'
            ? balanceFields(await this.products.points.balance(q, meta))
            : balanceFields(await this.products.cashback.balance(q, meta));
        return {
          card_id: card.id,
          card_name: card.name,
          reward_system: card.reward_system,
          currency: card.currency,
          ...answer,
        };
      }),
    );
    return { member_id: d.member_id, balances };
  }

  async history(d: { member_id: number; card_id: number; limit: number; offset: number }, meta: StaffMeta) {
    const card = await this.cardOf(meta, d.card_id);
    const { entries, total } = await this.books.historyPage(meta, card.id, d.member_id, d.limit, d.offset);
    const points = card.reward_system === 'points';
    return {
      card_id: card.id,
      member_id: d.member_id,
      reward_system: card.reward_system,
      transactions: entries.map((e) => ({
        id: e.id,
        event: e.event,
        points: points ? e.amount : 0,
        amount: points ? 0 : fromCents(e.amount),
        created_at: e.created_at.toISOString(),
      })),
      pagination: { limit: d.limit, offset: d.offset, total, has_more: d.offset + entries.length < total },
    };
  }

  /**
   * A manager's credit or debit with a reason: one posting (journal event `staff_adjustment`)
   * under the request's Idempotency-Key, with its audit event in the same transaction. A
   * deduction the spendable balance does not cover is refused (422) and writes nothing.
   */
  async adjust(d: AdjustRequest, meta: StaffMeta) {
    if (!meta.idempotency_key) throw new AppError('idempotency_key_required');
    const card = await this.cardOf(meta, d.card_id);
    const a = adjustment(d, card);
    await this.deps.members.mustExist(meta, d.member_id);
    const operation = 'staff.adjustments.create';
    const opts: PostingOptions<never> =
      d.direction === 'add'
        ? { operation, data: d, source: 'http', direction: 'credit' }
        : { operation, data: d, source: 'http', direction: 'debit', uncovered: (db) => uncoveredDeduction(db, a) };
    return this.books.posting(
      meta,
      opts,
      (at) => this.adjustmentPosting(a, meta, at),
      async (change, _posting, db) => {
        await recordAudit(
          this.deps.outbox,
          db,
          meta.tenant_id,
          {
            actor: auditActor(meta),
            action: 'balance.adjusted',
            target: { member_id: d.member_id, card_id: card.id, transaction_id: change.entry.id },
            amounts: a.moved,
            details: { reason: d.reason, direction: d.direction },
            request_id: meta.request_id,
          },
          change.entry.created_at,
        );
        return { adjustment: adjustmentView(a, change) };
      },
    );
  }

  /** internal.points.balances: the spendable points of each account asked for (one that cannot be read is left out). */
  async pointsBalances(d: { accounts: { card_id: number; member_id: number }[] }, meta: LedgerMeta) {
    const answers = await Promise.allSettled(d.accounts.map((a) => this.products.points.balance(a, meta)));
    return {
      balances: answers.flatMap((r) =>
        r.status === 'fulfilled'
          ? [{ card_id: r.value.card_id, member_id: r.value.member_id, points_balance: r.value.points_balance }]
          : [],
      ),
    };
  }

  private async cardOf(meta: LedgerMeta, cardId: number): Promise<RuledCard> {
    const card = await this.deps.cards.get(meta.tenant_id, cardId);
    if (!card) throw new AppError('card_not_found');
    return card;
  }

  /**
   * The adjustment's posting. A credit is a lot on the card's terms (spendable at once: no return
   * window); a debit takes the spendable lots soonest-expiring first.
   */
  private adjustmentPosting(a: Adjustment, meta: StaffMeta, at: Date): Posting {
    const { d, card } = a;
    const lot = d.direction === 'add' ? lotTerms(card, at, 'other') : undefined;
    return {
      account: { tenantId: meta.tenant_id, cardId: card.id, memberId: d.member_id },
      movement: {
        event: 'staff_adjustment',
        amount: a.units,
        metadata: { reason: d.reason, staff_id: meta.staff.id },
        at,
        lot,
        tier: d.direction === 'add' ? bonusTierMove(this.deps.outbox, card, at, a.units) : undefined,
      },
      event: this.events.posting(a.points ? 'points' : 'cents', {
        tenantId: meta.tenant_id,
        event: 'staff_adjustment',
        at,
        data: {
          member_id: d.member_id,
          card_id: card.id,
          ...a.moved,
          reason: d.reason,
          ...(lot ? lotEventFields(lot) : {}),
        },
      }),
    };
  }
}

export function staffDesk(deps: LedgerDeps, books: Accounting, products: Products): StaffDesk {
  return new StaffDesk(deps, books, products);
}

/** The adjustment in the card's unit: `points` on a points card, `amount` on a cashback card. */
function adjustment(d: AdjustRequest, card: RuledCard): Adjustment {
  const points = card.reward_system === 'points';
  const given = points ? d.points : d.amount;
  if (given === undefined) {
    const field = points ? 'points' : 'amount';
    throw new AppError('validation_error', `Invalid request: ${field}.`, {
      fields: [{ field, message: `is required on a ${card.reward_system} card` }],
    });
  }
  const units = points ? given : toCents(given);
  const sign = d.direction === 'add' ? 1 : -1;
  return { d, card, points, units, moved: points ? { points: sign * units } : { amount: fromCents(sign * units) } };
}

/** A deduction the spendable balance does not cover: 422 naming the balance. */
async function uncoveredDeduction(db: Queryable, a: Adjustment): Promise<AppError> {
  const balance = (await findBalance(db, a.card.id, a.d.member_id)) ?? 0;
  return a.points
    ? new AppError('insufficient_points', undefined, { points_balance: balance, points_required: a.units })
    : new AppError('insufficient_balance', undefined, {
        cashback_balance: fromCents(balance),
        amount_required: fromCents(a.units),
      });
}

function adjustmentView(a: Adjustment, change: BalanceChange) {
  const value = (n: number) => (a.points ? n : fromCents(n));
  return {
    transaction_id: change.entry.id,
    card_id: a.card.id,
    member_id: a.d.member_id,
    direction: a.d.direction,
    ...(a.points ? { points: a.units } : { amount: fromCents(a.units) }),
    previous_balance: value(change.previous),
    new_balance: value(change.balance),
    reason: a.d.reason,
    created_at: change.entry.created_at.toISOString(),
  };
}
