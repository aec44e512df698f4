import { AppError, type OperationOutput, type pointsOperations } from '@loyalty/contracts';
import type { Accounting, LedgerDeps, LedgerMeta, PostingOptions } from '../accounting.ts';
import { pointsRatio } from '../card-catalogue.ts';
import { pointsFor } from '../domain/formulas.ts';
import type { JournalEvent } from '../domain/journal.ts';
import { fromCents } from '../domain/money.ts';
import type { Holds } from '../lots/holds.ts';
import { lotTerms } from '../lots/terms.ts';
import { mergedInto } from '../merges/member-merge.ts';
import { creditTerms, lotEventFields } from '../lots/views.ts';
import { findBalance } from '../store/accounts.ts';
import { findReward, type Reward } from '../store/cards.ts';
import { ProductFlow } from './flow.ts';
import { bonusTierMove } from '../tiers/moves.ts';
import { appliedEventView, appliedView } from './rule-earn.ts';
import type { ProductUnit, RefundRequest } from './unit.ts';

type Out<K extends keyof typeof pointsOperations> = OperationOutput<(typeof pointsOperations)[K]>;

interface PointsTypes {
  redeemRequest: { card_id: number; reward_id: number; reference?: string };
  redemption: { amount: number; rewardId: number; reward: Reward };
  refundRequest: RefundRequest & { points_to_deduct?: number };
  earnAnswer: Out<'points.earn'>;
  redeemAnswer: Out<'points.redeem'>;
  refundAnswer: Out<'points.refund'>;
  balanceAnswer: Out<'points.balance'>;
  historyEntry: Out<'points.history'>['transactions'][number];
}

/** Points: integer points, floor(purchase x the card's ratio), a reward's cost to redeem. */
export const pointsUnit: ProductUnit<PointsTypes> = {
  kind: 'points',
  eventUnit: 'points',
  operations: { earn: 'points.earn', redeem: 'points.redeem', refund: 'points.refund' },
  labels: { earn: 'staff_added_points', redeem: 'staff_redeemed_reward', refund: 'points_refunded' },
  earned: (card, purchaseCents) => pointsFor(purchaseCents, pointsRatio(card)),
  value: (amount) => amount,
  insufficient: (balance, required) =>
    new AppError('insufficient_points', undefined, { points_balance: balance, points_required: required }),

  earnEvent: (e) => ({
    member_id: e.member.id,
    card_id: e.card.id,
    points: e.amount,
    purchase_amount: fromCents(e.purchaseCents),
    reference: e.reference ?? null,
    ...lotEventFields(e.lot),
    // The member's mail tells when pending points become spendable as a day of the card's zone.
    time_zone: e.card.time_zone,
    ...(e.rulesApplied.length > 0 ? { rules_applied: appliedEventView(e.card, e.rulesApplied) } : {}),
  }),
  earnAnswer: (e, change) => ({
    transaction_id: change.entry.id,
    points_earned: e.amount,
    new_balance: change.balance,
    member_id: e.member.id,
    card_id: e.card.id,
    is_new_member: e.created,
    notification_sent: e.member.has_email ? 'points_earned' : null,
    reference: e.reference ?? null,
    earned_at: change.entry.created_at.toISOString(),
    ...(e.lot.pending ? { pending_points: e.amount } : {}),
    ...creditTerms(e.lot),
    ...(e.rulesApplied.length > 0 ? { rules_applied: appliedView(e.card, e.rulesApplied) } : {}),
  }),

  async redemption(deps, card, d, meta) {
    const reward = await findReward(deps.pool, meta.tenant_id, card.id, d.reward_id);
    if (!reward) throw new AppError('reward_not_found');
    if (!reward.active) throw new AppError('reward_inactive');
    return { amount: reward.points_cost, rewardId: reward.id, reward };
  },
  redeemParameters: (d) => d,
  redeemEvent: (r) => ({
    member_id: r.memberId,
    card_id: r.card.id,
    points: r.redemption.amount,
    reward_id: r.redemption.reward.id,
    reward_name: r.redemption.reward.name,
    reference: r.reference ?? null,
  }),
  redeemAnswer: (r, change) => ({
    transaction_id: change.entry.id,
    reward_id: r.redemption.reward.id,
    reward_name: r.redemption.reward.name,
    points_redeemed: r.redemption.amount,
    new_balance: change.balance,
    member_id: r.memberId,
    card_id: r.card.id,
    reference: r.reference ?? null,
    redeemed_at: change.entry.created_at.toISOString(),
  }),

  explicitDeduction: (d) => d.points_to_deduct,
  refundEvent: (r) => ({
    member_id: r.memberId,
    card_id: r.card.id,
    transaction_id: r.change.entry.id,
    points: r.change.plan.deducted,
    pending_points: r.change.fromPending,
    refund_amount: fromCents(r.refundCents),
    previous_balance: r.change.previous,
    new_balance: r.change.balance,
    uncovered: r.warning ? r.warning.uncovered : 0,
    reference: r.reference ?? null,
  }),
  refundAnswer: (r) => ({
    transaction_id: r.change.entry.id,
    points_deducted: r.change.plan.deducted,
    ...(r.change.fromPending > 0 ? { pending_points_deducted: r.change.fromPending } : {}),
    refund_amount: fromCents(r.refundCents),
    previous_balance: r.change.previous,
    new_balance: r.change.balance,
    member_id: r.memberId,
    card_id: r.card.id,
    reference: r.reference ?? null,
    balance_warning: r.warning,
    refunded_at: r.at.toISOString(),
  }),

  balanceAnswer: (card, memberId, account, now) => ({
    card_id: card.id,
    member_id: memberId,
    points_balance: account.balance,
    pending_points: account.pending,
    held_points: account.held,
    next_expiries: account.next_expiries.map((x) => ({ points: x.amount, expires_at: x.expires_at.toISOString() })),
    reward_system: 'points',
    queried_at: now.toISOString(),
  }),
  historyEntry: (e) => ({ id: e.id, points: e.amount, event: e.event, created_at: e.created_at.toISOString() }),
};

/** A points movement another service asks for (internal.points.debit / internal.points.credit). */
interface PointsMove {
  card_id: number;
  member_id: number;
  points: number;
  event: JournalEvent;
  reference?: string;
  metadata?: Record<string, unknown>;
}

interface MoveAnswer {
  transaction_id: number;
  points: number;
  previous_balance: number;
  new_balance: number;
}

/**
 * The points operations of the interface (the product flow in points), and the points movements
 * other services ask for: claim approval debits (capturing the claim's hold) and referral bonus credits.
 */
export class PointsProduct extends ProductFlow<PointsTypes> {
  constructor(
    deps: LedgerDeps,
    books: Accounting,
    private readonly holds: Holds,
  ) {
    super(deps, books, pointsUnit);
  }

  /**
   * internal.points.debit / internal.points.credit: a saga step of another service, always under
   * its deterministic key (`claim:<id>`, `referral:<id>:referrer`), so a retry replays the first
   * reply. A refused debit writes nothing, so the same key can succeed later.
   */
  async move(direction: 'debit' | 'credit', d: PointsMove, meta: LedgerMeta) {
    try {
      return await this.moveOnce(direction, d, meta);
    } catch (err) {
      // A credit refused because the member was merged away while it was posted (the posting
      // statement refuses a merged source): asked again, it lands on the target.
      const merged =
        direction === 'credit' &&
        err instanceof AppError &&
        err.code === 'member_not_found' &&
        (await mergedInto(this.deps.pool, meta.tenant_id, d.member_id)) !== d.member_id;
      if (merged) return this.moveOnce(direction, d, meta);
      // Retried naming the target of a merge under a key first used for the source: its first answer.
      const operation = `internal.points.${direction}`;
      return this.books.answeredBeforeMerge<MoveAnswer>(meta, { operation, data: d, source: 'service' }, err);
    }
  }

  private async moveOnce(direction: 'debit' | 'credit', d: PointsMove, meta: LedgerMeta) {
    if (!meta.idempotency_key) {
      throw new AppError('validation_error', 'Points movements need meta.idempotency_key.', {
        fields: [{ field: 'idempotency_key', message: 'is required' }],
      });
    }
    const card = await this.card(meta, d.card_id);
    // A member merged into another since the saga began: its points move on the target's account
    // (the key's record keeps the request as it was asked, so a retry still replays).
    const memberId = await mergedInto(this.deps.pool, meta.tenant_id, d.member_id);
    const k = { tenantId: meta.tenant_id, cardId: card.id, memberId };
    const operation = `internal.points.${direction}`;
    const opts: PostingOptions<MoveAnswer> =
      direction === 'credit'
        ? { operation, data: d, source: 'service', direction }
        : {
            operation,
            data: d,
            source: 'service',
            direction,
            uncovered: async (db) => pointsUnit.insufficient((await findBalance(db, card.id, memberId)) ?? 0, d.points),
            // A debit under the key of a hold (a claim's) captures the hold instead (lots/holds.ts).
            instead: (db, at) => this.holds.captureIfHeld(db, meta, k, d, at),
          };
    return this.books.posting(
      meta,
      opts,
      (at) => {
        // A credit (a referral bonus) is a lot on the card's terms; it waits for no return window.
        const lot = direction === 'credit' ? lotTerms(card, at, 'other') : undefined;
        return {
          account: k,
          movement: {
            event: d.event,
            amount: d.points,
            reference: d.reference,
            metadata: d.metadata,
            at,
            lot,
            tier: lot ? bonusTierMove(this.deps.outbox, card, at, d.points) : undefined,
          },
          event: this.events.posting('points', {
            tenantId: meta.tenant_id,
            event: d.event,
            at,
            data: {
              member_id: memberId,
              card_id: card.id,
              points: direction === 'credit' ? d.points : -d.points,
              reference: d.reference ?? null,
              ...(d.metadata ? { metadata: d.metadata } : {}),
              ...(lot ? lotEventFields(lot) : {}),
            },
          }),
        };
      },
      (change): MoveAnswer => ({
        transaction_id: change.entry.id,
        points: d.points,
        previous_balance: change.previous,
        new_balance: change.balance,
      }),
    );
  }
}

export function pointsProduct(deps: LedgerDeps, books: Accounting, holds: Holds): PointsProduct {
  return new PointsProduct(deps, books, holds);
}
