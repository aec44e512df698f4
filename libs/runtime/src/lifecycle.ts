import { flushTraces } from './tracing.ts';
import type { Logger } from './logger.ts';

export interface Stoppable {
  stop(): Promise<void>;
}

/**
 * Run a started service until SIGTERM/SIGINT, then stop it gracefully: the service stops taking
 * work, finishes what is in flight, drains NATS and closes pools. If that takes longer than
 * `timeoutMs`, exit anyway (non-zero) so an orchestrator is never blocked.
 */
export function runUntilSignal(service: Stoppable, log: Logger, timeoutMs: number): void {
  let stopping = false;
  const onSignal = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      log.error({ timeoutMs }, 'graceful shutdown took too long; exiting');
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    service.stop().then(
      async () => {
        await flushTraces();
        log.info('stopped');
        process.exit(0);
      },
      (err) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
}

/** Exit with a clear message when start-up fails (bad config, unreachable dependency). */
export function failStartup(log: Logger, err: unknown): never {
  log.fatal({ err: err instanceof Error ? err.message : String(err) }, 'start-up failed');
  process.exit(1);
}
