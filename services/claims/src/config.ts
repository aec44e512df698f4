import { z } from 'zod';
import { commonEnv, databaseEnv, loadConfig } from '@loyalty/runtime';

export const ClaimsConfig = z.object({
  ...commonEnv,
  ...databaseEnv,
  OPS_PORT: z.coerce.number().int().min(0).max(65535).default(9103),
  /** Upper bound of one call to another service (identity, ledger). */
  REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
  /** How often each replica looks for pending requests past their expiry and for stuck approvals. */
  CLAIM_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(30_000),
  /**
   * An approval left half-done (the process died between the ledger debit and the status change)
   * is finished by the sweeper once it is this old; live approvals take milliseconds.
   */
  CLAIM_APPROVAL_RESUME_AFTER_MS: z.coerce.number().int().positive().default(60_000),
});
export type ClaimsConfig = z.infer<typeof ClaimsConfig>;

export const readConfig = (env: Record<string, string | undefined> = process.env) => loadConfig(ClaimsConfig, env);
