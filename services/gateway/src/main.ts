import { createLogger, failStartup, runUntilSignal, startTracing } from '@loyalty/runtime';
import { readConfig } from './config.ts';
import { startGateway } from './service.ts';

const log = createLogger('gateway', process.env.LOG_LEVEL ?? 'info');
try {
  // Before anything connects: PostgreSQL clients made from now on are traced (off unless configured).
  // The gateway hands its request's span to each call (no active span kept across awaits).
  await startTracing('gateway', process.env, { asyncContext: false });
  const config = readConfig();
  const gateway = await startGateway(config, { log: createLogger('gateway', config.LOG_LEVEL) });
  runUntilSignal(gateway, log, config.SHUTDOWN_TIMEOUT_MS);
} catch (err) {
  failStartup(log, err);
}
