import { z } from 'zod';
import { commonEnv, databaseEnv, loadConfig } from '@loyalty/runtime';

export const ReferralsConfig = z.object({
  ...commonEnv,
  ...databaseEnv,
  OPS_PORT: z.coerce.number().int().min(0).max(65535).default(9104),
  /** How long a call to identity or the ledger may take before it counts as unavailable. */
  REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
  /** How often the sweeper looks for referrals whose bonus payment was interrupted. */
  REFERRAL_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(5_000),
  /** A due payment untouched for this long is taken over by the sweeper (its payer died or failed). */
  REFERRAL_PAYMENT_RETRY_AFTER_MS: z.coerce.number().int().positive().default(30_000),
});
export type ReferralsConfig = z.infer<typeof ReferralsConfig>;

export const readConfig = (env: Record<string, string | undefined> = process.env) => loadConfig(ReferralsConfig, env);
