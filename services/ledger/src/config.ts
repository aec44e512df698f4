import { z } from 'zod';
import { commonEnv, databaseEnv, loadConfig } from '@loyalty/runtime';

export const LedgerConfig = z.object({
  ...commonEnv,
  ...databaseEnv,
  OPS_PORT: z.coerce.number().int().min(0).max(65535).default(9102),
  /** How long a call to identity (finding or creating the member of an earn) may take before it counts as unavailable. */
  REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
  /** How long a card's settings are used from memory (an update on any replica evicts them at once); 0 = always read. */
  CARD_CACHE_TTL_MS: z.coerce.number().int().min(0).default(30_000),
  /** How long a member found by id is remembered (members are never changed or removed); 0 = always ask identity. */
  MEMBER_CACHE_TTL_MS: z.coerce.number().int().min(0).default(60_000),
  /**
   * Posting statements in flight per replica for earns and redemptions without an Idempotency-Key;
   * postings arriving meanwhile share the next statement (group commit). Each takes a connection.
   */
  POSTING_STATEMENTS: z.coerce.number().int().positive().default(2),
  /** How often each replica settles accounts that time changed (lots maturing or expiring), warns of expiries and releases overdue holds. */
  LOT_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  /** Accounts settled per transaction by that sweep. */
  LOT_SWEEP_BATCH: z.coerce.number().int().positive().max(10_000).default(500),
  /** Wrong PINs in a row that lock a member's PIN redemption. */
  PIN_MAX_ATTEMPTS: z.coerce.number().int().positive().default(5),
  /** How long PIN redemption stays locked after too many wrong PINs; each further lock before a right PIN doubles it. */
  PIN_LOCK_MINUTES: z.coerce.number().int().positive().default(15),
  /** The longest a doubled PIN lock lasts. */
  PIN_MAX_LOCK_MINUTES: z.coerce
    .number()
    .int()
    .positive()
    .default(24 * 60),
});
export type LedgerConfig = z.infer<typeof LedgerConfig>;

export const readConfig = (env: Record<string, string | undefined> = process.env) => loadConfig(LedgerConfig, env);
