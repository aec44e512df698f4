import { createLogger, failStartup, runUntilSignal, startTracing } from '@loyalty/runtime';
import { readConfig } from './config.ts';
import { startClaims } from './service.ts';

const log = createLogger('claims', process.env.LOG_LEVEL ?? 'info');
try {
  // Before anything connects: PostgreSQL clients made from now on are traced (off unless configured).
  await startTracing('claims');
  const config = readConfig();
  const service = await startClaims(config, { log: createLogger('claims', config.LOG_LEVEL) });
  runUntilSignal(service, log, config.SHUTDOWN_TIMEOUT_MS);
} catch (err) {
  failStartup(log, err);
}
