/** Journal labels and how each one reads in a history and as a domain event. */
export const journalEvents = [
  'cashback_earned',
  'cashback_redeemed',
  'cashback_refunded',
  'staff_added_points',
  'staff_redeemed_reward',
  'points_refunded',
  'reward_claimed',
  'referral_bonus',
  /** A manager's manual credit or debit with a reason (staff console); signed like any row. */
  'staff_adjustment',
  /** What was left of a lot when it expired. */
  'points_expired',
  'cashback_expired',
  /** Points an event rule gave for a reported member event (birthday, signup...). */
  'event_bonus',
  /** A transfer between two members: the sender's row (negative) and the receiver's (positive). */
  'points_transferred_out',
  'points_transferred_in',
  /** A member merge: the source's balance leaving (negative) and arriving at the target (positive). */
  'member_merged',
] as const;
export type JournalEvent = (typeof journalEvents)[number];

/**
 * The domain event a journal entry emits (`<root>.events.ledger.<name>`), named by what happened.
 * Points earned by a purchase and points redeemed for a reward are `points_earned` and
 * `points_redeemed`; the others carry their label's name.
 */
export function domainEventName(event: JournalEvent): string {
  switch (event) {
    case 'staff_added_points':
      return 'points_earned';
    case 'staff_redeemed_reward':
      return 'points_redeemed';
    default:
      return event;
  }
}

/**
 * Cashback history `type`: an earn is an `earning`; every deduction (redeem and refund) is a
 * `redemption`; a staff adjustment is either, by its sign.
 */
export function cashbackEntryType(event: string, amount: number): 'earning' | 'redemption' {
  if (event === 'staff_adjustment' || event === 'member_merged' || event.startsWith('imported_'))
    return amount >= 0 ? 'earning' : 'redemption';
  return event === 'cashback_earned' ? 'earning' : 'redemption';
}
