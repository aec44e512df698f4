import { createLogger, failStartup, runUntilSignal, startTracing } from '@loyalty/runtime';
import { readConfig } from './config.ts';
import { startLedger } from './service.ts';

const log = createLogger('ledger', process.env.LOG_LEVEL ?? 'info');
try {
  // Before anything connects: PostgreSQL clients made from now on are traced (off unless configured).
  await startTracing('ledger');
  const config = readConfig();
  const service = await startLedger(config, { log: createLogger('ledger', config.LOG_LEVEL) });
  runUntilSignal(service, log, config.SHUTDOWN_TIMEOUT_MS);
} catch (err) {
  failStartup(log, err);
}
