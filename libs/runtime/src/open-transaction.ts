import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Marks the async context of an open transaction, so that `ServiceClient` can refuse network calls
 * made inside one. Not in production: an AsyncLocalStorage puts a hook on every promise of the
 * process, and the rule is proven by development and the test suite, which run with it. A module
 * of its own (not db.ts) so that a process without a database (the gateway), whose service client
 * asks it, does not load the `pg` driver.
 */
export const openTransaction = process.env.NODE_ENV === 'production' ? undefined : new AsyncLocalStorage<true>();

/** Whether the caller runs inside `withTransaction` (always false in production; see `openTransaction`). */
export function inTransaction(): boolean {
  return openTransaction?.getStore() === true;
}
