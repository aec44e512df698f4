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
export function balanceFields<A extends BalanceFigures>(answer: A): BalanceFigures {
  const figures: BalanceFigures = {};
  for (const key of BALANCE_FIELDS) copyDefined(figures, answer, key);
  return figures;
}

function copyDefined<K extends keyof BalanceFigures>(to: BalanceFigures, from: BalanceFigures, key: K): void {
  const value = from[key];
  if (value !== undefined) to[key] = value;
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
