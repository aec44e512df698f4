import { pino, type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs on stdout; every line names the service. */
export function createLogger(service: string, level = 'info'): Logger {
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        '*.api_key',
        '*.member_token',
        '*.code',
        '*.pin',
        'req.headers["x-api-key"]',
        'req.headers["x-member-token"]',
      ],
      censor: '[redacted]',
    },
  });
}
