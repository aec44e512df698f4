/** The fields of a balance answer the member view shows (the staff contract's CardBalance). */
const BALANCE_FIELDS = [
  'points_balance',
  'cashback_balance',
  'pending_points',
  'held_points',
  'pending_cashback',
  'held_cashback',
  'next_expiries',
] as const;

/**
 * The balance figures of a public balance answer: the spendable balance, and the pending, held
 * and expiring amounts once the ledger's answers carry them (lots); anything else is left out.
 */
export function balanceFields(answer: object): BalanceFigures {
  const a = answer as Record<string, unknown>;
  return Object.fromEntries(BALANCE_FIELDS.filter((k) => a[k] !== undefined).map((k) => [k, a[k]]));
}

export interface BalanceFigures {
  points_balance?: number;
  cashback_balance?: number;
  pending_points?: number;
  held_points?: number;
  pending_cashback?: number;
  held_cashback?: number;
  next_expiries?: { points?: number; amount?: number; expires_at: string }[];
}
