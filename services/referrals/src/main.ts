import { createLogger, failStartup, runUntilSignal, startTracing } from '@loyalty/runtime';
import { readConfig } from './config.ts';
import { startReferrals } from './service.ts';

const log = createLogger('referrals', process.env.LOG_LEVEL ?? 'info');
try {
  // Before anything connects: PostgreSQL clients made from now on are traced (off unless configured).
  await startTracing('referrals');
  const config = readConfig();
  const service = await startReferrals(config, { log: createLogger('referrals', config.LOG_LEVEL) });
  runUntilSignal(service, log, config.SHUTDOWN_TIMEOUT_MS);
} catch (err) {
  failStartup(log, err);
}
