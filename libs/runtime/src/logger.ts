import { pino, type DestinationStream, type Logger } from 'pino';
import { traceIds } from './tracing.ts';

export type { Logger };

/**
 * Structured JSON logs on stdout; every line names the service and its level by name
 * (`"level":"info"`), as log pipelines expect, rather than pino's numbers.
 */
export function createLogger(service: string, level = 'info', destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service },
      formatters: { level: (label) => ({ level: label }) },
      timestamp: pino.stdTimeFunctions.isoTime,
      // With tracing on, a line logged inside a traced request names its trace and span.
      mixin: () => traceIds() ?? {},
      redact: {
        paths: [
          '*.api_key',
          '*.member_token',
          '*.code',
          '*.pin',
          // Webhook signing secrets and the key that encrypts them at rest.
          'secret',
          '*.secret',
          '*.previous_secret',
          '*.SECRETS_KEY',
          '*.SECRETS_KEY_PREVIOUS',
          'req.headers["x-api-key"]',
          'req.headers["x-member-token"]',
        ],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

/** The message of a thrown value, for a log line (anything may be thrown). */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
