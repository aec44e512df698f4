import { divideFloor, divideHalfUp, pow10, type Decimal } from './money.ts';

/** A cashback card's rule: percentage of the purchase, from a minimum purchase, capped per purchase. */
export interface CashbackRule {
  percentage: Decimal;
  minCents: number;
  /** null: no cap. */
  maxCents: number | null;
}

/**
 * Cashback of a purchase: purchase x percentage / 100 rounded half-up to the
 * cent; a purchase below the minimum earns nothing; one purchase never earns more than the cap.
 */
export function cashbackFor(purchaseCents: number, rule: CashbackRule): number {
  if (purchaseCents < rule.minCents) return 0;
  const raw = divideHalfUp(BigInt(purchaseCents) * rule.percentage.units, 100n * pow10(rule.percentage.scale));
  const capped = rule.maxCents === null ? raw : raw < BigInt(rule.maxCents) ? raw : BigInt(rule.maxCents);
  return Number(capped);
}

/** Points of a purchase: floor(purchase amount x ratio), computed on cents exactly. */
export function pointsFor(purchaseCents: number, ratio: Decimal): number {
  return Number(divideFloor(BigInt(purchaseCents) * ratio.units, 100n * pow10(ratio.scale)));
}

export interface BalanceWarningFigures {
  requested: number;
  deducted: number;
  uncovered: number;
}

/**
 * What a refund deducts. `requested` is the computed (or explicit) deduction; when the refund names
 * an earlier purchase, `purchaseCap` is what that purchase earned minus what was already refunded on
 * it, and the deduction never exceeds it. The balance never goes below zero: when it cannot cover
 * the deduction, the whole balance is deducted and a warning says what was left uncovered.
 */
export function refundDeduction(
  requested: number,
  purchaseCap: number | null,
  balance: number,
): { deducted: number; warning: BalanceWarningFigures | null } {
  const wanted = purchaseCap === null ? requested : Math.min(requested, Math.max(purchaseCap, 0));
  if (wanted <= balance) return { deducted: wanted, warning: null };
  return { deducted: balance, warning: { requested: wanted, deducted: balance, uncovered: wanted - balance } };
}
