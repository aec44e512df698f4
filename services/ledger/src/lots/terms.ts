/**
 * The lifecycle of points and cashback: every credit is a lot that becomes
 * spendable at `availableAt` (after the card's pending period, for purchases) and expires at
 * `expiresAt` (the card's expiry policy), and the member is warned `expiry_warning_days` before.
 * Pure rules; the store applies them (store.ts).
 */

export const DAY_MS = 86_400_000;

/** A card's lifecycle settings (null expiry: credits never expire). */
export interface LotPolicy {
  expiry_days: number | null;
  pending_days: number;
  expiry_warning_days: number;
}

/** Where a credit comes from: only purchases wait for the return window (pending_days). */
export type CreditSource = 'purchase' | 'other';

export interface LotTerms {
  /** Not spendable yet: counted in `pending` until availableAt. */
  pending: boolean;
  availableAt: Date;
  expiresAt: Date | null;
  warnAt: Date | null;
}

/** The terms of a credit made at `at` on a card with `policy`. */
export function lotTerms(policy: LotPolicy, at: Date, source: CreditSource): LotTerms {
  const waitMs = source === 'purchase' ? policy.pending_days * DAY_MS : 0;
  const availableAt = new Date(at.getTime() + waitMs);
  const expiresAt = policy.expiry_days === null ? null : new Date(availableAt.getTime() + policy.expiry_days * DAY_MS);
  const warnAt = expiresAt && new Date(expiresAt.getTime() - policy.expiry_warning_days * DAY_MS);
  return { pending: waitMs > 0, availableAt, expiresAt, warnAt };
}

/** The lot of the purchase a refund names, as the refund finds it. */
export interface PurchaseLot {
  remaining: number;
  pending: boolean;
}

export interface RefundPlan {
  /** Taken from the purchase's own lot (pending or not). */
  fromPurchaseLot: number;
  /** Taken from the other spendable lots, soonest-expiring first. */
  fromBalance: number;
  deducted: number;
  /** Set when the spendable balance could not cover the rest: what was asked, taken and left. */
  warning: { requested: number; deducted: number; uncovered: number } | null;
}

/**
 * What a refund deducts (rounding and lots). `requested` is the computed or
 * explicit deduction; `purchaseCap` what the named purchase earned minus what refunds on it already
 * took (null: no purchase named). The purchase's own lot gives first, pending or not; the rest
 * comes from the spendable balance, never below zero, and what it cannot cover is reported.
 */
export function planRefund(
  requested: number,
  purchaseCap: number | null,
  purchaseLot: PurchaseLot | null,
  spendable: number,
): RefundPlan {
  const wanted = purchaseCap === null ? requested : Math.min(requested, Math.max(purchaseCap, 0));
  const fromPurchaseLot = purchaseLot ? Math.min(wanted, purchaseLot.remaining) : 0;
  // A spendable purchase lot is part of the spendable balance: the rest comes from what is left of it.
  const spendableLeft = spendable - (purchaseLot && !purchaseLot.pending ? fromPurchaseLot : 0);
  const fromBalance = Math.min(wanted - fromPurchaseLot, spendableLeft);
  const deducted = fromPurchaseLot + fromBalance;
  return {
    fromPurchaseLot,
    fromBalance,
    deducted,
    warning: deducted < wanted ? { requested: wanted, deducted, uncovered: wanted - deducted } : null,
  };
}
