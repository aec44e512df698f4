import { z } from 'zod';
import { commonEnv, databaseEnv, loadConfig } from '@loyalty/runtime';

export const ReferralsConfig = z.object({
  ...commonEnv,
  ...databaseEnv,
  OPS_PORT: z.coerce.number().int().min(0).max(65535).default(9104),
});
export type ReferralsConfig = z.infer<typeof ReferralsConfig>;

export const readConfig = (env: Record<string, string | undefined> = process.env) => loadConfig(ReferralsConfig, env);
