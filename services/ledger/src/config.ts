import { z } from 'zod';
import { commonEnv, databaseEnv, loadConfig } from '@loyalty/runtime';

export const LedgerConfig = z.object({
  ...commonEnv,
  ...databaseEnv,
  OPS_PORT: z.coerce.number().int().min(0).max(65535).default(9102),
});
export type LedgerConfig = z.infer<typeof LedgerConfig>;

export const readConfig = (env: Record<string, string | undefined> = process.env) => loadConfig(LedgerConfig, env);
