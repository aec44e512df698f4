import { packageDir, pingEndpoint, runService, type Logger, type RunningService } from '@loyalty/runtime';
import type { ClaimsConfig } from './config.ts';

export const SERVICE_VERSION = '0.1.0';

/** Composition root: config -> connections -> endpoints -> shutdown. */
export async function startClaims(config: ClaimsConfig, opts: { log?: Logger } = {}): Promise<RunningService> {
  return runService({
    name: 'claims',
    version: SERVICE_VERSION,
    config,
    log: opts.log,
    migrationsDir: packageDir(import.meta.url, '../migrations'),
    async setup() {
      return { endpoints: { 'system.ping': pingEndpoint('claims', SERVICE_VERSION) } };
    },
  });
}
