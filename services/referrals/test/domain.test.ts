import { describe, expect, it } from 'vitest';
import { AppError } from '@loyalty/contracts';
import { CODE_ALPHABET, CODE_LENGTH, generateReferralCode, normalizeReferralCode } from '../src/domain/codes.ts';
import {
  bonusCredits,
  bonusKey,
  checkApplicable,
  existingReferralOutcome,
  isPurchaseEarn,
} from '../src/domain/referral.ts';
import { conversionRate, periodStart, referralStats } from '../src/domain/stats.ts';

describe('referral codes', () => {
  it('are 8 characters with no look-alikes (0, O, 1, I, L)', () => {
    for (let i = 0; i < 500; i++) {
      const code = generateReferralCode();
      expect(code).toMatch(new RegExp(`^[${CODE_ALPHABET}]{${CODE_LENGTH}}$`));
      expect(code).not.toMatch(/[0O1IL]/);
    }
    expect(CODE_ALPHABET).not.toMatch(/[0O1IL]/);
  });

  it('are random: 2,000 draws give 2,000 codes', () => {
    expect(new Set(Array.from({ length: 2000 }, () => generateReferralCode())).size).toBe(2000);
  });

  it('use every symbol of the alphabet', () => {
    let i = 0;
    const code = generateReferralCode(() => i++ % CODE_ALPHABET.length);
    expect(code).toBe(CODE_ALPHABET.slice(0, CODE_LENGTH));
  });

  it('are read back whatever the case and separators', () => {
    expect(normalizeReferralCode('ab2c-d3ef')).toBe('AB2CD3EF');
    expect(normalizeReferralCode(' AB2C D3EF ')).toBe('AB2CD3EF');
    expect(normalizeReferralCode('AB2CD3E')).toBeNull(); // too short
    expect(normalizeReferralCode('AB2CD3E0')).toBeNull(); // 0 is not in the alphabet
    expect(normalizeReferralCode('AB2CD3EOO')).toBeNull();
  });
});

describe('statistics', () => {
  it('conversion rate is successful / total x 100 with two decimals, half up', () => {
    expect(conversionRate(0, 0)).toBe(0);
    expect(conversionRate(0, 5)).toBe(0);
    expect(conversionRate(5, 5)).toBe(100);
    expect(conversionRate(1, 3)).toBe(33.33);
    expect(conversionRate(2, 3)).toBe(66.67);
    expect(conversionRate(1, 8)).toBe(12.5);
    expect(conversionRate(1, 16)).toBe(6.25);
    expect(conversionRate(1, 32)).toBe(3.13); // 3.125 rounds half up
    expect(conversionRate(99_999, 100_000)).toBe(100); // 99.999 -> 100.00
  });

  it('builds the statistics object', () => {
    expect(referralStats({ total: 4, successful: 3, pending: 1 })).toEqual({
      total_referrals: 4,
      successful_referrals: 3,
      pending_referrals: 1,
      conversion_rate: 75,
    });
  });

  it('periods start 7, 30 and 90 days back; all has no start', () => {
    const now = new Date('2025-03-31T12:00:00Z');
    expect(periodStart('7d', now)?.toISOString()).toBe('2025-03-24T12:00:00.000Z');
    expect(periodStart('30d', now)?.toISOString()).toBe('2025-03-01T12:00:00.000Z');
    expect(periodStart('90d', now)?.toISOString()).toBe('2024-12-31T12:00:00.000Z');
    expect(periodStart('all', now)).toBeNull();
  });
});

describe('referral rules', () => {
  const points = { reward_system: 'points' as const };
  it('refuses a self referral and a cashback card', () => {
    const codeOf = (f: () => void) => {
      try {
        f();
      } catch (err) {
        return (err as AppError).code;
      }
      return 'no error';
    };
    expect(codeOf(() => checkApplicable(points, 7, 7))).toBe('self_referral');
    expect(codeOf(() => checkApplicable({ reward_system: 'cashback' }, 7, 8))).toBe('wrong_card_type');
    expect(() => checkApplicable(points, 7, 8)).not.toThrow();
  });

  it('a retry finishes its own unpaid referral; anything else is a second referral', () => {
    const due = { status: 'pending' as const, payment_due_at: new Date(), referrer_id: 1, apply_key: null };
    expect(existingReferralOutcome(due, 1)).toBe('finish_payment');
    expect(existingReferralOutcome(due, 2)).toBe('already_applied');
    expect(existingReferralOutcome({ ...due, status: 'completed' }, 1)).toBe('already_applied');
    expect(existingReferralOutcome({ ...due, payment_due_at: null }, 1)).toBe('already_applied'); // waiting for first purchase
    // A retry under the apply's own Idempotency-Key gets its referral back, whatever happened meanwhile.
    const keyed = { ...due, apply_key: 'k1' };
    expect(existingReferralOutcome(keyed, 1, 'k1')).toBe('finish_payment');
    expect(existingReferralOutcome({ ...keyed, status: 'completed' }, 1, 'k1')).toBe('answer');
    expect(existingReferralOutcome({ ...keyed, payment_due_at: null }, 1, 'k1')).toBe('answer');
    expect(existingReferralOutcome({ ...keyed, status: 'completed' }, 1, 'k2')).toBe('already_applied');
    expect(existingReferralOutcome({ ...keyed, status: 'completed' }, 2, 'k1')).toBe('already_applied');
  });

  it('credits both parties under deterministic keys, skipping a zero bonus', () => {
    const r = { id: 42, referrer_id: 1, referee_id: 2, referrer_bonus: 100, referee_bonus: 50 };
    expect(bonusCredits(r)).toEqual([
      { party: 'referrer', memberId: 1, points: 100, key: 'referral:42:referrer' },
      { party: 'referee', memberId: 2, points: 50, key: 'referral:42:referee' },
    ]);
    expect(bonusCredits({ ...r, referee_bonus: 0 })).toHaveLength(1);
    expect(bonusKey(42, 'referee')).toBe(bonusKey(42, 'referee'));
  });

  it('only purchase earns count as the first purchase', () => {
    expect(isPurchaseEarn({})).toBe(true);
    expect(isPurchaseEarn({ event: 'staff_added_points' })).toBe(true);
    expect(isPurchaseEarn({ event: 'referral_bonus' })).toBe(false);
  });
});
