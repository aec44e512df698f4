import { AppError } from '@loyalty/contracts';
import type { Queryable } from '@loyalty/runtime';
import { refundByLines, type RefundedBefore, type RefundLine } from '../domain/rules/index.ts';
import type { AccountKey } from '../store/accounts.ts';
import { earnOf, earnRules, type EarnRules, type JournalRules } from '../store/rules.ts';

/** What a refund of a purchase that rules shaped deducts, and what its journal row records. */
export interface RuleRefund {
  requested: number;
  record: Omit<JournalRules, 'journalId'>;
}

/** What earlier refunds by line of the purchase took back. */
function refundedBefore(detail: EarnRules): RefundedBefore {
  const quantities: Record<string, number> = {};
  const fixed: number[] = [];
  for (const r of detail.refunds) {
    for (const l of r.lines) quantities[l.sku] = (quantities[l.sku] ?? 0) + l.quantity;
    fixed.push(...r.fixed.map((f) => f.rule_id));
  }
  return { quantities, fixed };
}

const mismatch = (message: string, details: Record<string, unknown> = {}) =>
  new AppError('line_items_mismatch', message, details);

/**
 * A refund naming a purchase whose earn went through earning rules, decided under the account's
 * lock (the caller holds it): with `line_items`, what those lines earned (bonuses included) and
 * any fixed bonus the refund breaks (domain/rules/refund.ts); without, the purchase's whole earn
 * in proportion to the refunded amount, so a refund of the whole purchase takes back its bonuses
 * too. undefined: the refund is not one of those (the card's formula applies, as always).
 */
export async function ruleRefund(
  db: Queryable,
  k: AccountKey,
  d: { reference?: string; line_items?: RefundLine[] },
  refundCents: number,
): Promise<RuleRefund | undefined> {
  if (d.reference === undefined) return undefined;
  const purchase = await earnOf(db, k.cardId, d.reference);
  if (purchase === undefined) {
    if (d.line_items) throw mismatch('No purchase on this card has this reference, so no line of it can be refunded.');
    return undefined;
  }
  if (purchase.member_id !== k.memberId) throw new AppError('refund_reference_mismatch');
  const detail = await earnRules(db, purchase.id);
  const base = { cardId: k.cardId, memberId: k.memberId, refundOf: purchase.id };
  if (d.line_items) {
    if (detail === undefined || detail.allocation.lines.every((l) => l.sku === null))
      throw mismatch('The purchase was earned without line items; refund it by amount.');
    const r = refundByLines(detail.allocation, refundedBefore(detail), d.line_items);
    if ('problems' in r)
      throw mismatch('The line items do not match what is left of the purchase.', { fields: r.problems });
    return {
      requested: r.amount,
      record: { ...base, rules: detail.rules, refund: { lines: r.lines, fixed: r.fixed } },
    };
  }
  if (detail === undefined || detail.rules.length === 0 || purchase.purchase_cents <= 0) return undefined;
  const share = (BigInt(purchase.amount) * BigInt(refundCents)) / BigInt(purchase.purchase_cents);
  const requested = share > BigInt(purchase.amount) ? purchase.amount : Number(share);
  return { requested, record: { ...base, rules: detail.rules } };
}
