/**
 * When a failed delivery is tried again: exponential backoff with jitter, for three days.
 * The n-th failed attempt waits between half and all of min(30 s x 2^(n-1), 6 h): 15-30 s,
 * 30-60 s, 1-2 min, ... 4-8 h ... then 3-6 h each time. The jitter spreads the retries of a burst
 * that failed together (an endpoint down for a minute) instead of sending them back at one instant.
 * A delivery's retries stop at its expiry (three days after it was created or redelivered): the
 * last attempt is made then, and its failure is final.
 */
export const RETRY_BASE_MS = 30_000;
export const RETRY_CAP_MS = 6 * 3600_000;
/** How long a delivery is retried, and how long an endpoint may fail every delivery before it is disabled. */
export const RETRY_WINDOW_MS = 72 * 3600_000;

/** The delay after the `failures`-th failed attempt, before jitter. */
export function backoffMs(failures: number): number {
  return Math.min(RETRY_BASE_MS * 2 ** Math.max(0, Math.min(failures - 1, 30)), RETRY_CAP_MS);
}

/** When to try again after `failures` failed attempts, or null: give up (the expiry has passed). */
export function nextAttemptAt(
  failures: number,
  now: Date,
  expiresAt: Date,
  random: () => number = Math.random,
): Date | null {
  if (now.getTime() >= expiresAt.getTime()) return null;
  const delay = backoffMs(failures);
  const jittered = delay / 2 + random() * (delay / 2);
  return new Date(Math.min(now.getTime() + jittered, expiresAt.getTime()));
}
