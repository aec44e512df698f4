/**
 * The wrong-PIN lock of a member's redemption PIN, as pure state transitions. A lock that simply
 * ran out after a fixed time would let a guesser try `maxAttempts` PINs every `lockMs`, forever
 * (5 per 15 minutes is 480 a day, enough to walk a 4-digit PIN space in three weeks). So each
 * lock in a row doubles the next one, up to `maxLockMs`, and only the right PIN forgets them.
 */
export interface PinState {
  failedAttempts: number;
  lockedUntil: Date | null;
  /** Locks since the last right PIN: the next lock lasts lockMs x 2^consecutiveLocks (capped). */
  consecutiveLocks: number;
}

export interface PinPolicy {
  maxAttempts: number;
  /** The first lock; each following one (without a right PIN in between) is twice the previous. */
  lockMs: number;
  /** The longest a lock lasts, however many came before it. */
  maxLockMs: number;
}

export function isLocked(state: PinState, now: Date): boolean {
  return activeLock(state, now) !== null;
}

/** Until when PIN redemption is locked at `now`; null: it is not. */
export function activeLock(state: PinState, now: Date): Date | null {
  return state.lockedUntil !== null && state.lockedUntil.getTime() > now.getTime() ? state.lockedUntil : null;
}

/** How long the lock after `previousLocks` earlier locks lasts: lockMs doubled each time, capped. */
export function lockDuration(previousLocks: number, policy: PinPolicy): number {
  // 2^40 x any positive lockMs is past any sensible cap; bounding the exponent keeps it finite.
  const doubled = policy.lockMs * 2 ** Math.min(previousLocks, 40);
  return Math.min(doubled, Math.max(policy.maxLockMs, policy.lockMs));
}

/**
 * After a wrong PIN: one more failure; the `maxAttempts`-th locks PIN redemption for
 * `lockDuration(consecutiveLocks)` and counts one more lock in a row.
 */
export function afterWrongPin(state: PinState, now: Date, policy: PinPolicy): PinState & { locked: boolean } {
  // A lock that has run out starts a fresh count of attempts, but not of locks.
  const failed = (state.lockedUntil !== null && !isLocked(state, now) ? 0 : state.failedAttempts) + 1;
  if (failed >= policy.maxAttempts)
    return {
      failedAttempts: 0,
      lockedUntil: new Date(now.getTime() + lockDuration(state.consecutiveLocks, policy)),
      consecutiveLocks: state.consecutiveLocks + 1,
      locked: true,
    };
  return { failedAttempts: failed, lockedUntil: null, consecutiveLocks: state.consecutiveLocks, locked: false };
}

/** After the right PIN: the count of attempts and the escalation start again. */
export function afterRightPin(): PinState {
  return { failedAttempts: 0, lockedUntil: null, consecutiveLocks: 0 };
}
