import { AppError, type CardSummary } from '@loyalty/contracts';

/**
 * A referral's life:
 *   pending, payment_due_at NULL      waiting for the referee's first points earn (card setting)
 *   pending, payment_due_at set       bonuses due: being paid now, or interrupted (crash, ledger
 *                                     down) and finished by a retried apply or by the sweeper
 *   completed                         both bonuses credited through the ledger
 * The ledger credits use deterministic idempotency keys, so paying a due referral again (retry,
 * sweeper, a second replica) replays the first credit instead of paying twice.
 */
export type ReferralStatus = 'pending' | 'completed';

export interface Referral {
  id: number;
  tenant_id: number;
  card_id: number;
  referrer_id: number;
  referee_id: number;
  code: string;
  referrer_bonus: number;
  referee_bonus: number;
  status: ReferralStatus;
  payment_due_at: Date | null;
  /** Idempotency-Key of the apply that created it. */
  apply_key: string | null;
  created_at: Date;
  completed_at: Date | null;
}

export type BonusParty = 'referrer' | 'referee';

/** The ledger idempotency key of one party's bonus: the same for every attempt to pay it. */
export function bonusKey(referralId: number, party: BonusParty): string {
  return `referral:${referralId}:${party}`;
}

/** The credits a due referral still needs (a zero bonus is no credit at all). */
export function bonusCredits(
  r: Pick<Referral, 'id' | 'referrer_id' | 'referee_id' | 'referrer_bonus' | 'referee_bonus'>,
) {
  const credits: { party: BonusParty; memberId: number; points: number; key: string }[] = [];
  if (r.referrer_bonus > 0)
    credits.push({
      party: 'referrer',
      memberId: r.referrer_id,
      points: r.referrer_bonus,
      key: bonusKey(r.id, 'referrer'),
    });
  if (r.referee_bonus > 0)
    credits.push({ party: 'referee', memberId: r.referee_id, points: r.referee_bonus, key: bonusKey(r.id, 'referee') });
  return credits;
}

/** Rules checked before a referral is written. Referral bonuses are points: a cashback card is refused. */
export function checkApplicable(card: Pick<CardSummary, 'reward_system'>, referrerId: number, refereeId: number): void {
  if (card.reward_system !== 'points')
    throw new AppError('wrong_card_type', 'Referral bonuses are points; this card is a cashback card.');
  if (referrerId === refereeId) throw new AppError('self_referral');
}

/**
 * What an apply finding an existing referral for the same referee and card does.
 * - The same Idempotency-Key as the apply that created it: this is a retry of that apply; it
 *   finishes the payment if still due, and answers with the referral in any case (even when the
 *   sweeper completed it meanwhile).
 * - No matching key, but the referral of the same referrer is still due (its apply crashed or
 *   failed midway): finish the payment.
 * - Anything else is a second referral: refused.
 */
export function existingReferralOutcome(
  existing: Pick<Referral, 'status' | 'payment_due_at' | 'referrer_id' | 'apply_key'>,
  referrerId: number,
  applyKey?: string,
): 'finish_payment' | 'answer' | 'already_applied' {
  const due = existing.status === 'pending' && existing.payment_due_at !== null;
  if (applyKey !== undefined && existing.apply_key === applyKey && existing.referrer_id === referrerId)
    return due ? 'finish_payment' : 'answer';
  if (due && existing.referrer_id === referrerId) return 'finish_payment';
  return 'already_applied';
}

export function applyMessage(r: Pick<Referral, 'status'>): string {
  return r.status === 'completed'
    ? 'Referral applied; bonus points were awarded to both members.'
    : "Referral applied; bonus points will be awarded to both members on the referee's first purchase.";
}

export function appliedReferralView(r: Referral) {
  return {
    id: r.id,
    referrer_id: r.referrer_id,
    referee_id: r.referee_id,
    referrer_bonus: r.referrer_bonus,
    referee_bonus: r.referee_bonus,
    status: r.status,
    created_at: r.created_at.toISOString(),
  };
}

/**
 * Whether a ledger points_earned event is a purchase earn. The ledger labels a purchase earn
 * `staff_added_points`; should it ever publish other credits (a referral bonus) on the same
 * subject, they must not count as the referee's first purchase.
 */
export function isPurchaseEarn(data: { event?: unknown }): boolean {
  return data.event === undefined || data.event === 'staff_added_points';
}
