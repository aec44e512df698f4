import { z } from 'zod';
import { commonEnv, databaseEnv, loadConfig } from '@loyalty/runtime';

export const ClaimsConfig = z.object({
  ...commonEnv,
  ...databaseEnv,
  OPS_PORT: z.coerce.number().int().min(0).max(65535).default(9103),
});
export type ClaimsConfig = z.infer<typeof ClaimsConfig>;

export const readConfig = (env: Record<string, string | undefined> = process.env) => loadConfig(ClaimsConfig, env);
