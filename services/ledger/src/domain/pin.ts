/** The wrong-PIN lock of a member's redemption PIN, as pure state transitions. */
export interface PinState {
  failedAttempts: number;
  lockedUntil: Date | null;
}

export interface PinPolicy {
  maxAttempts: number;
  lockMs: number;
}

export function isLocked(state: PinState, now: Date): boolean {
  return state.lockedUntil !== null && state.lockedUntil.getTime() > now.getTime();
}

/** After a wrong PIN: one more failure; the `maxAttempts`-th locks PIN redemption for `lockMs`. */
export function afterWrongPin(state: PinState, now: Date, policy: PinPolicy): PinState & { locked: boolean } {
  // A lock that has run out starts a fresh count.
  const failed = (state.lockedUntil !== null && !isLocked(state, now) ? 0 : state.failedAttempts) + 1;
  if (failed >= policy.maxAttempts)
    return { failedAttempts: 0, lockedUntil: new Date(now.getTime() + policy.lockMs), locked: true };
  return { failedAttempts: failed, lockedUntil: null, locked: false };
}

/** After the right PIN: the count starts again. */
export function afterRightPin(): PinState {
  return { failedAttempts: 0, lockedUntil: null };
}
