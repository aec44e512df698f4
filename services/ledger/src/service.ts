import { packageDir, pingEndpoint, runService, type Logger, type RunningService } from '@loyalty/runtime';
import type { LedgerConfig } from './config.ts';

export const SERVICE_VERSION = '0.1.0';

/** Composition root: config -> connections -> endpoints -> shutdown. */
export async function startLedger(config: LedgerConfig, opts: { log?: Logger } = {}): Promise<RunningService> {
  return runService({
    name: 'ledger',
    version: SERVICE_VERSION,
    config,
    log: opts.log,
    migrationsDir: packageDir(import.meta.url, '../migrations'),
    async setup() {
      return { endpoints: { 'system.ping': pingEndpoint('ledger', SERVICE_VERSION) } };
    },
  });
}
