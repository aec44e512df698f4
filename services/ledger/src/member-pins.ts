import { AppError } from '@loyalty/contracts';
import { withTransaction, type Clock, type Pool } from '@loyalty/runtime';
import { hashPin, pinMatches } from './domain/pin-hash.ts';
import { activeLock, afterRightPin, afterWrongPin, type PinPolicy } from './domain/pin.ts';
import { findPin, savePin, savePinAttempts } from './store/pins.ts';

/**
 * A member's redemption PIN. On a card with allows_pin_redemption, a member who has set a PIN
 * must give it to redeem; `policy.maxAttempts` wrong PINs in a row lock PIN redemption for
 * `policy.lockMs`, each further lock before a right PIN twice as long (up to `policy.maxLockMs`;
 * domain/pin.ts). A wrong attempt is committed on its own, before the refusal is answered.
 */
export function memberPins(deps: { pool: Pool; clock: Clock; policy: PinPolicy }) {
  const { pool, clock, policy } = deps;

  function lockedError(until: Date): AppError {
    return new AppError('pin_locked', undefined, { locked_until: until.toISOString() });
  }

  /**
   * Check `pin` against the member's PIN under a row lock and record the outcome. Resolves when it
   * is right; throws pin_required, invalid_pin (with attempts_remaining) or pin_locked otherwise.
   * A member who has not set a PIN passes.
   */
  async function verify(
    tenantId: number,
    memberId: number,
    pin: string | undefined,
    missingMessage: string,
  ): Promise<void> {
    const outcome = await withTransaction(pool, async (db) => {
      const stored = await findPin(db, tenantId, memberId, true);
      if (!stored) return { ok: true as const };
      const now = clock.now();
      const state = {
        failedAttempts: stored.failed_attempts,
        lockedUntil: stored.locked_until,
        consecutiveLocks: stored.consecutive_locks,
      };
      const lockedUntil = activeLock(state, now);
      if (lockedUntil) return { ok: false as const, error: lockedError(lockedUntil) };
      if (pin === undefined) return { ok: false as const, error: new AppError('pin_required', missingMessage) };
      if (await pinMatches(pin, stored.pin_hash)) {
        const reset = afterRightPin();
        if (state.failedAttempts > 0 || state.lockedUntil || state.consecutiveLocks > 0)
          await savePinAttempts(db, tenantId, memberId, reset, now);
        return { ok: true as const };
      }
      const next = afterWrongPin(state, now, policy);
      await savePinAttempts(db, tenantId, memberId, next, now);
      // A wrong PIN that locks sets lockedUntil (and only such a one).
      if (next.lockedUntil) return { ok: false as const, error: lockedError(next.lockedUntil) };
      return {
        ok: false as const,
        error: new AppError('invalid_pin', undefined, { attempts_remaining: policy.maxAttempts - next.failedAttempts }),
      };
    });
    if (!outcome.ok) throw outcome.error;
  }

  return {
    /** Before a cashback redemption on a card with allows_pin_redemption. */
    checkForRedemption(tenantId: number, memberId: number, pin: string | undefined): Promise<void> {
      return verify(tenantId, memberId, pin, 'This card requires your PIN for redemption.');
    },

    /** Set the PIN; changing an existing one needs current_pin (a member token alone cannot replace it). */
    async set(
      tenantId: number,
      memberId: number,
      d: { pin: string; current_pin?: string },
    ): Promise<{ pin_set: true; updated_at: string }> {
      await verify(tenantId, memberId, d.current_pin, 'A PIN is already set; send current_pin to change it.');
      const now = clock.now();
      await savePin(pool, tenantId, memberId, await hashPin(d.pin), now);
      return { pin_set: true, updated_at: now.toISOString() };
    },
  };
}
export type MemberPins = ReturnType<typeof memberPins>;
