import { AppError, type cashbackOperations, type OperationOutput } from '@loyalty/contracts';
import type { Accounting, LedgerDeps } from '../accounting.ts';
import { cashbackPercentage, cashbackRule } from '../card-catalogue.ts';
import { cashbackFor } from '../domain/formulas.ts';
import { cashbackEntryType } from '../domain/journal.ts';
import { fromCents, toCents } from '../domain/money.ts';
import { creditTerms, lotEventFields } from '../lots/views.ts';
import { ProductFlow } from './flow.ts';
import { appliedEventView, appliedView } from './rule-earn.ts';
import type { ProductUnit, RefundRequest } from './unit.ts';

type Out<K extends keyof typeof cashbackOperations> = OperationOutput<(typeof cashbackOperations)[K]>;

interface CashbackTypes {
  redeemRequest: { card_id: number; amount: number; pin?: string; reference?: string };
  redemption: { amount: number };
  refundRequest: RefundRequest & { cashback_to_deduct?: number };
  earnAnswer: Out<'cashback.earn'>;
  redeemAnswer: Out<'cashback.redeem'>;
  refundAnswer: Out<'cashback.refund'>;
  balanceAnswer: Out<'cashback.balance'>;
  historyEntry: Out<'cashback.history'>['transactions'][number];
}

/**
 * Cashback: cents (written as currency units), the card's percentage of a purchase from its
 * minimum, capped per purchase; a redemption takes an amount, behind the member's PIN where the
 * card asks for it.
 */
export const cashbackUnit: ProductUnit<CashbackTypes> = {
  kind: 'cashback',
  eventUnit: 'cents',
  operations: { earn: 'cashback.earn', redeem: 'cashback.redeem', refund: 'cashback.refund' },
  labels: { earn: 'cashback_earned', redeem: 'cashback_redeemed', refund: 'cashback_refunded' },
  earned: (card, purchaseCents) => cashbackFor(purchaseCents, cashbackRule(card)),
  value: fromCents,
  insufficient: (balance, required) =>
    new AppError('insufficient_balance', undefined, {
      cashback_balance: fromCents(balance),
      requested: fromCents(required),
    }),

  earnEvent: (e) => ({
    member_id: e.member.id,
    card_id: e.card.id,
    amount: fromCents(e.amount),
    purchase_amount: fromCents(e.purchaseCents),
    cashback_percentage: cashbackPercentage(e.card),
    currency: e.card.currency,
    reference: e.reference ?? null,
    ...lotEventFields(e.lot),
    ...(e.rulesApplied.length > 0 ? { rules_applied: appliedEventView(e.card, e.rulesApplied) } : {}),
  }),
  earnAnswer: (e, change) => ({
    transaction_id: change.entry.id,
    purchase_amount: fromCents(e.purchaseCents),
    cashback_percentage: cashbackPercentage(e.card),
    cashback_earned: fromCents(e.amount),
    new_balance: fromCents(change.balance),
    member_id: e.member.id,
    card_id: e.card.id,
    is_new_member: e.created,
    reference: e.reference ?? null,
    earned_at: change.entry.created_at.toISOString(),
    ...(e.lot.pending ? { pending_cashback: fromCents(e.amount) } : {}),
    ...creditTerms(e.lot),
    ...(e.rulesApplied.length > 0 ? { rules_applied: appliedView(e.card, e.rulesApplied) } : {}),
  }),

  async redemption(deps, card, d, meta, memberId) {
    if (card.allows_pin_redemption) await deps.pins.checkForRedemption(meta.tenant_id, memberId, d.pin);
    return { amount: toCents(d.amount) };
  },
  // The PIN is a credential, not a parameter: it never goes into the idempotency record.
  redeemParameters: ({ pin: _pin, ...parameters }) => parameters,
  redeemEvent: (r) => ({
    member_id: r.memberId,
    card_id: r.card.id,
    amount: fromCents(r.redemption.amount),
    currency: r.card.currency,
    reference: r.reference ?? null,
  }),
  redeemAnswer: (r, change) => ({
    transaction_id: change.entry.id,
    amount_redeemed: fromCents(r.redemption.amount),
    new_balance: fromCents(change.balance),
    member_id: r.memberId,
    card_id: r.card.id,
    reference: r.reference ?? null,
    redeemed_at: change.entry.created_at.toISOString(),
  }),

  explicitDeduction: (d) => (d.cashback_to_deduct === undefined ? undefined : toCents(d.cashback_to_deduct)),
  refundEvent: (r) => ({
    member_id: r.memberId,
    card_id: r.card.id,
    transaction_id: r.change.entry.id,
    amount: fromCents(r.change.plan.deducted),
    pending_amount: fromCents(r.change.fromPending),
    refund_amount: fromCents(r.refundCents),
    previous_balance: fromCents(r.change.previous),
    new_balance: fromCents(r.change.balance),
    uncovered: r.warning ? r.warning.uncovered : 0,
    currency: r.card.currency,
    reference: r.reference ?? null,
  }),
  refundAnswer: (r) => ({
    transaction_id: r.change.entry.id,
    cashback_deducted: fromCents(r.change.plan.deducted),
    ...(r.change.fromPending > 0 ? { pending_cashback_deducted: fromCents(r.change.fromPending) } : {}),
    refund_amount: fromCents(r.refundCents),
    previous_balance: fromCents(r.change.previous),
    new_balance: fromCents(r.change.balance),
    currency: r.card.currency,
    member_id: r.memberId,
    card_id: r.card.id,
    reference: r.reference ?? null,
    balance_warning: r.warning,
    refunded_at: r.at.toISOString(),
  }),

  balanceAnswer: (card, memberId, account, now) => ({
    card_id: card.id,
    member_id: memberId,
    cashback_balance: fromCents(account.balance),
    pending_cashback: fromCents(account.pending),
    held_cashback: fromCents(account.held),
    next_expiries: account.next_expiries.map((x) => ({
      amount: fromCents(x.amount),
      expires_at: x.expires_at.toISOString(),
    })),
    cashback_percentage: cashbackPercentage(card),
    currency: card.currency,
    reward_system: 'cashback',
    queried_at: now.toISOString(),
  }),
  historyEntry: (e) => ({
    id: e.id,
    type: cashbackEntryType(e.event, e.amount),
    amount: fromCents(e.amount),
    points: 0,
    event: e.event,
    created_at: e.created_at.toISOString(),
  }),
};

/** The cashback operations of the interface: the product flow in cents. */
export function cashbackProduct(deps: LedgerDeps, books: Accounting): ProductFlow<CashbackTypes> {
  return new ProductFlow(deps, books, cashbackUnit);
}
