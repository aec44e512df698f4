import type { ReferralPeriod } from '@loyalty/contracts';

const DAY_MS = 24 * 60 * 60 * 1000;
const PERIOD_DAYS: Record<Exclude<ReferralPeriod, 'all'>, number> = { '7d': 7, '30d': 30, '90d': 90 };

/** Start of a statistics period (referrals created at or after it count); null for `all`. */
export function periodStart(period: ReferralPeriod, now: Date): Date | null {
  if (period === 'all') return null;
  return new Date(now.getTime() - PERIOD_DAYS[period] * DAY_MS);
}

/**
 * successful / total x 100, rounded half-up to two decimals, in integers (no binary-float
 * rounding surprises such as 2/3 -> 66.66); 0 when there are no referrals.
 */
export function conversionRate(successful: number, total: number): number {
  if (total <= 0) return 0;
  // round(successful * 10000 / total) with integer arithmetic, half up.
  const hundredths = Math.floor((successful * 20_000 + total) / (2 * total));
  return hundredths / 100;
}

export interface ReferralCounts {
  total: number;
  successful: number;
  pending: number;
}

export function referralStats(c: ReferralCounts) {
  return {
    total_referrals: c.total,
    successful_referrals: c.successful,
    pending_referrals: c.pending,
    conversion_rate: conversionRate(c.successful, c.total),
  };
}
