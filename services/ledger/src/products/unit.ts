import type { AppError, MemberSummary } from '@loyalty/contracts';
import type { AccountView, BalanceChange, LedgerDeps, LedgerMeta, RefundChange } from '../accounting.ts';
import type { JournalEvent } from '../domain/journal.ts';
import type { AppliedRule } from '../domain/rules/index.ts';
import type { EventData } from '../events.ts';
import type { LotTerms } from '../lots/terms.ts';
import type { JournalEntry } from '../store/accounts.ts';
import type { Card } from '../store/cards.ts';
import type { LineItemInput } from './rule-earn.ts';

/** A member as an operation names it: member_id wins over email and phone. */
export type MemberRef = { member_id?: number; email?: string; phone?: string };

export type EarnRequest = MemberRef & {
  card_id: number;
  member_name?: string;
  purchase_amount: number;
  reference?: string;
  metadata?: Record<string, unknown>;
  line_items?: LineItemInput[];
  tags?: string[];
};

export type RefundRequest = MemberRef & {
  card_id: number;
  refund_amount: number;
  reference?: string;
  line_items?: { sku: string; quantity: number }[];
};

/** What an earn did, for the product's event and answer. */
export interface Earned {
  card: Card;
  member: MemberSummary;
  /** The member was created by this earn. */
  created: boolean;
  /** Credited, in the unit. */
  amount: number;
  purchaseCents: number;
  reference: string | undefined;
  lot: LotTerms;
  /** The earning rules beyond the base that gave something (empty: none). */
  rulesApplied: AppliedRule[];
}

/** What a redemption takes, in the unit, as the product found it (a points reward, say). */
export interface Redemption {
  amount: number;
  /** The reward redeemed, for the journal row (points). */
  rewardId?: number;
}

/** What a redemption did, for the product's event and answer. */
export interface Redeemed<R extends Redemption> {
  card: Card;
  memberId: number;
  redemption: R;
  reference: string | undefined;
}

/** The warning of a refund the balance could not cover, in the interface's numbers. */
export interface BalanceWarning {
  code: 'insufficient_balance';
  message: string;
  requested: number;
  deducted: number;
  uncovered: number;
}

/** What a refund did, for the product's event and answer. */
export interface Refunded {
  card: Card;
  memberId: number;
  refundCents: number;
  reference: string | undefined;
  at: Date;
  change: RefundChange;
  warning: BalanceWarning | null;
}

/** The request and answer types of one product's operations. */
export interface ProductTypes {
  redeemRequest: { card_id: number; reference?: string };
  redemption: Redemption;
  refundRequest: RefundRequest;
  earnAnswer: object;
  redeemAnswer: object;
  refundAnswer: object;
  balanceAnswer: object;
  historyEntry: object;
}

/**
 * What tells the products apart: the unit of their amounts (integer points; cents shown as
 * currency units), the card's formula, the journal labels and operation names, what a redemption
 * takes, and the shapes of their events and answers (each product keeps its own field names).
 * The flows themselves are one (flow.ts).
 */
export interface ProductUnit<T extends ProductTypes> {
  kind: 'points' | 'cashback';
  /** How a posting's event writes balances. */
  eventUnit: 'points' | 'cents';
  operations: { earn: string; redeem: string; refund: string };
  labels: { earn: JournalEvent; redeem: JournalEvent; refund: JournalEvent };
  /** What a purchase of `purchaseCents` earns on the card, in the unit (the card's formula). */
  earned(card: Card, purchaseCents: number): number;
  /** An amount in the unit as the interface writes it. */
  value(amount: number): number;
  /** A debit of `required` that a spendable `balance` does not cover. */
  insufficient(balance: number, required: number): AppError;

  earnEvent(e: Earned): EventData;
  earnAnswer(e: Earned, change: BalanceChange): T['earnAnswer'];

  /** The redemption the request asks for, its checks done (a reward to find, a PIN to verify). */
  redemption(
    deps: LedgerDeps,
    card: Card,
    d: T['redeemRequest'],
    meta: LedgerMeta,
    memberId: number,
  ): Promise<T['redemption']>;
  /** The request as its Idempotency-Key record keeps it: a credential is never one. */
  redeemParameters(d: T['redeemRequest']): object;
  redeemEvent(r: Redeemed<T['redemption']>): EventData;
  redeemAnswer(r: Redeemed<T['redemption']>, change: BalanceChange): T['redeemAnswer'];

  /** The deduction the refund names itself (points_to_deduct, cashback_to_deduct), in the unit. */
  explicitDeduction(d: T['refundRequest']): number | undefined;
  refundEvent(r: Refunded): EventData & { transaction_id: number };
  refundAnswer(r: Refunded): T['refundAnswer'];

  balanceAnswer(card: Card, memberId: number, account: AccountView, now: Date): T['balanceAnswer'];
  historyEntry(e: JournalEntry): T['historyEntry'];
}
