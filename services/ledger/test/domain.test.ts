import { describe, expect, it } from 'vitest';
import { cashbackFor, pointsFor, refundDeduction } from '../src/domain/formulas.ts';
import { balanceFields } from '../src/domain/balance-view.ts';
import { cashbackEntryType, domainEventName } from '../src/domain/journal.ts';
import { decimal, decimalText, fromCents, parseDecimal, toCents } from '../src/domain/money.ts';
import { hashPin, pinMatches } from '../src/domain/pin-hash.ts';
import { afterRightPin, afterWrongPin, isLocked, lockDuration, type PinState } from '../src/domain/pin.ts';

describe('money', () => {
  it('converts JSON numbers to cents and back exactly', () => {
    expect(toCents(19.99)).toBe(1999);
    expect(toCents(0.1 + 0.2)).toBe(30);
    expect(toCents(1_000_000_000)).toBe(100_000_000_000);
    expect(fromCents(1999)).toBe(19.99);
    expect(fromCents(5)).toBe(0.05);
    expect(fromCents(-250)).toBe(-2.5);
  });

  it('keeps rates as exact decimals', () => {
    expect(decimal(2.5, 4)).toEqual({ units: 25000n, scale: 4 });
    expect(parseDecimal('0.100000')).toEqual({ units: 100000n, scale: 6 });
    expect(decimalText(parseDecimal('12.0500'))).toBe('12.0500');
    expect(decimalText({ units: 5n, scale: 3 })).toBe('0.005');
  });
});

describe('cashback formula', () => {
  const rule = { percentage: decimal(5, 4), minCents: 1000, maxCents: 5000 };

  it('rounds half-up to the cent', () => {
    // 5% of 19.99 = 0.9995 -> 1.00; 5% of 19.89 = 0.9945 -> 0.99
    expect(cashbackFor(1999, rule)).toBe(100);
    expect(cashbackFor(1989, rule)).toBe(99);
    // 2.5% of 0.30 ... with no minimum: 0.0075 -> 0.01
    expect(cashbackFor(30, { percentage: decimal(2.5, 4), minCents: 0, maxCents: null })).toBe(1);
    // 3.3333% of 100.00 = 3.33333 -> 3.33
    expect(cashbackFor(10000, { percentage: decimal(3.3333, 4), minCents: 0, maxCents: null })).toBe(333);
  });

  it('earns nothing below the minimum purchase and is capped by the maximum', () => {
    expect(cashbackFor(999, rule)).toBe(0);
    expect(cashbackFor(1000, rule)).toBe(50);
    expect(cashbackFor(100_000, rule)).toBe(5000);
    expect(cashbackFor(1_000_000, rule)).toBe(5000);
    expect(cashbackFor(1_000_000, { ...rule, maxCents: null })).toBe(50_000);
  });

  it('is exact for amounts where binary floating point is not', () => {
    // 0.1% of 1,000,000,000.00 and of 0.35 (0.00035 -> 0.00)
    const tenth = { percentage: decimal(0.1, 4), minCents: 0, maxCents: null };
    expect(cashbackFor(100_000_000_000, tenth)).toBe(100_000_000);
    expect(cashbackFor(35, tenth)).toBe(0);
    // 1.15% of 100.00 = 1.15 exactly (1.15 * 100 / 100 is 1.1499999999999999 in doubles)
    expect(cashbackFor(10000, { percentage: decimal(1.15, 4), minCents: 0, maxCents: null })).toBe(115);
  });
});

describe('points formula', () => {
  it('floors purchase x ratio', () => {
    expect(pointsFor(1999, decimal(1, 6))).toBe(19);
    expect(pointsFor(1999, decimal(0.1, 6))).toBe(1);
    expect(pointsFor(10000, decimal(0.1, 6))).toBe(10);
    expect(pointsFor(999, decimal(0.1, 6))).toBe(0);
    expect(pointsFor(1050, decimal(2.5, 6))).toBe(26);
    // 0.07 x 100 = 7.000000000000001 in doubles; exact arithmetic gives 7
    expect(pointsFor(7, decimal(100, 6))).toBe(7);
  });
});

describe('refund deduction', () => {
  it('deducts what was asked when the balance covers it', () => {
    expect(refundDeduction(300, null, 1000)).toEqual({ deducted: 300, warning: null });
  });
  it('never exceeds what the purchase earned minus earlier refunds', () => {
    expect(refundDeduction(300, 200, 1000)).toEqual({ deducted: 200, warning: null });
    expect(refundDeduction(300, 0, 1000)).toEqual({ deducted: 0, warning: null });
    expect(refundDeduction(300, -5, 1000)).toEqual({ deducted: 0, warning: null });
  });
  it('never makes a balance negative and says what was left uncovered', () => {
    expect(refundDeduction(300, null, 120)).toEqual({
      deducted: 120,
      warning: { requested: 300, deducted: 120, uncovered: 180 },
    });
    expect(refundDeduction(300, 250, 0)).toEqual({
      deducted: 0,
      warning: { requested: 250, deducted: 0, uncovered: 250 },
    });
  });
});

describe('journal labels', () => {
  it('names domain events by what happened', () => {
    expect(domainEventName('staff_added_points')).toBe('points_earned');
    expect(domainEventName('staff_redeemed_reward')).toBe('points_redeemed');
    expect(domainEventName('cashback_refunded')).toBe('cashback_refunded');
    expect(domainEventName('reward_claimed')).toBe('reward_claimed');
  });
  it('types every cashback deduction as a redemption', () => {
    expect(cashbackEntryType('cashback_earned', 425)).toBe('earning');
    expect(cashbackEntryType('cashback_redeemed', -200)).toBe('redemption');
    expect(cashbackEntryType('cashback_refunded', -200)).toBe('redemption');
    expect(cashbackEntryType('staff_adjustment', 500)).toBe('earning');
    expect(cashbackEntryType('staff_adjustment', -500)).toBe('redemption');
  });
});

describe('PIN lock', () => {
  const MINUTE = 60_000;
  const policy = { maxAttempts: 5, lockMs: 15 * MINUTE, maxLockMs: 24 * 60 * MINUTE };
  const fresh: PinState = { failedAttempts: 0, lockedUntil: null, consecutiveLocks: 0 };
  /** Wrong PINs at `at` until they lock (five from a fresh count): the state after the lock. */
  const fiveWrong = (s: PinState, at: Date) => {
    let next = afterWrongPin(s, at, policy);
    while (!next.locked && next.failedAttempts > 0) next = afterWrongPin(next, at, policy);
    expect(next.locked).toBe(true);
    return next;
  };
  const t0 = new Date('2030-01-01T00:00:00Z');

  it('locks on the fifth wrong PIN in a row, for the lock period', () => {
    let s = fresh;
    for (let i = 1; i <= 4; i++) {
      const next = afterWrongPin(s, t0, policy);
      expect(next.locked).toBe(false);
      expect(next.failedAttempts).toBe(i);
      s = next;
    }
    const locked = afterWrongPin(s, t0, policy);
    expect(locked.locked).toBe(true);
    expect(isLocked(locked, new Date(t0.getTime() + 15 * 60_000 - 1))).toBe(true);
    expect(isLocked(locked, new Date(t0.getTime() + 15 * 60_000))).toBe(false);
    // after the lock ran out a wrong PIN starts a fresh count
    const after = afterWrongPin(locked, new Date(t0.getTime() + 16 * 60_000), policy);
    expect(after).toEqual({ failedAttempts: 1, lockedUntil: null, consecutiveLocks: 1, locked: false });
  });

  it('doubles each lock in a row (15, 30, 60 minutes, ...) up to 24 hours', () => {
    let s = fresh;
    let now = t0;
    const minutes: number[] = [];
    for (let lock = 1; lock <= 10; lock++) {
      s = fiveWrong(s, now);
      expect(s.consecutiveLocks).toBe(lock);
      const ms = s.lockedUntil!.getTime() - now.getTime();
      minutes.push(ms / MINUTE);
      // still locked a moment before it ends: another wrong PIN there changes nothing
      expect(isLocked(s, new Date(now.getTime() + ms - 1))).toBe(true);
      now = s.lockedUntil!;
      expect(isLocked(s, now)).toBe(false);
    }
    expect(minutes).toEqual([15, 30, 60, 120, 240, 480, 960, 1440, 1440, 1440]);
    // so after the first day a guesser gets 5 tries a day, not 480
    expect(lockDuration(1_000_000, policy)).toBe(24 * 60 * MINUTE);
  });

  it('forgets the escalation only after the right PIN', () => {
    let s = fiveWrong(fresh, t0);
    s = fiveWrong(s, s.lockedUntil!);
    expect(s.consecutiveLocks).toBe(2);
    // wrong PINs below the limit after a lock ran out keep the escalation
    const later = new Date(s.lockedUntil!.getTime() + 48 * 60 * MINUTE);
    const oneWrong = afterWrongPin(s, later, policy);
    expect(oneWrong).toMatchObject({ failedAttempts: 1, lockedUntil: null, consecutiveLocks: 2, locked: false });
    expect(fiveWrong(oneWrong, later).lockedUntil!.getTime() - later.getTime()).toBe(60 * MINUTE);
    expect(afterRightPin()).toEqual({ failedAttempts: 0, lockedUntil: null, consecutiveLocks: 0 });
    expect(fiveWrong(afterRightPin(), later).lockedUntil!.getTime() - later.getTime()).toBe(15 * MINUTE);
  });

  it('stores PINs as salted scrypt hashes', async () => {
    const a = await hashPin('1234');
    const b = await hashPin('1234');
    expect(a).not.toBe(b);
    expect(a).not.toContain('1234');
    expect(await pinMatches('1234', a)).toBe(true);
    expect(await pinMatches('1235', a)).toBe(false);
  });
});

describe('balanceFields (the staff member view)', () => {
  it('keeps the balance figures, pending, held and expiring amounts when an answer has them, and nothing else', () => {
    expect(
      balanceFields({ card_id: 2, member_id: 42, points_balance: 340, reward_system: 'points', queried_at: 'x' }),
    ).toEqual({ points_balance: 340 });
    const withLots = {
      card_id: 2,
      points_balance: 340,
      pending_points: 50,
      held_points: 100,
      next_expiries: [{ points: 20, expires_at: '2027-01-01T00:00:00.000Z' }],
      lots: [{ id: 1 }],
    };
    expect(balanceFields(withLots)).toEqual({
      points_balance: 340,
      pending_points: 50,
      held_points: 100,
      next_expiries: [{ points: 20, expires_at: '2027-01-01T00:00:00.000Z' }],
    });
    expect(balanceFields({ cashback_balance: 12.5, pending_cashback: 1.25, held_cashback: 0 })).toEqual({
      cashback_balance: 12.5,
      pending_cashback: 1.25,
      held_cashback: 0,
    });
  });
});
