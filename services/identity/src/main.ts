import { createLogger, failStartup, runUntilSignal, startTracing } from '@loyalty/runtime';
import { readConfig } from './config.ts';
import { startIdentity } from './service.ts';

const log = createLogger('identity', process.env.LOG_LEVEL ?? 'info');
try {
  // Before anything connects: PostgreSQL clients made from now on are traced (off unless configured).
  await startTracing('identity');
  const config = readConfig();
  const service = await startIdentity(config, { log: createLogger('identity', config.LOG_LEVEL) });
  runUntilSignal(service, log, config.SHUTDOWN_TIMEOUT_MS);
} catch (err) {
  failStartup(log, err);
}
