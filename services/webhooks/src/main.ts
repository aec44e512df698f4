import { createLogger, failStartup, runUntilSignal, startTracing } from '@loyalty/runtime';
import { readConfig } from './config.ts';
import { startWebhooks } from './service.ts';

const log = createLogger('webhooks', process.env.LOG_LEVEL ?? 'info');
try {
  // Before anything connects: PostgreSQL clients made from now on are traced (off unless configured).
  await startTracing('webhooks');
  const config = readConfig();
  const service = await startWebhooks(config, { log: createLogger('webhooks', config.LOG_LEVEL) });
  runUntilSignal(service, log, config.SHUTDOWN_TIMEOUT_MS);
} catch (err) {
  failStartup(log, err);
}
