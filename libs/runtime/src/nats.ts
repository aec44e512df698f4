import { readFileSync } from 'node:fs';
import { connect, JSONCodec, type NatsConnection } from 'nats';
import type { Logger } from './logger.ts';
import { natsInboxPrefix } from './nats-auth.ts';

export type { NatsConnection };
const codec = JSONCodec();

/** This process's NATS user (NATS_USER, NATS_PASSWORD) and, for TLS, the CA to trust (NATS_TLS_CA). */
export interface NatsAuth {
  user?: string;
  password?: string;
  tlsCa?: string;
}

/** Connect and keep reconnecting for ever: a NATS restart must not take the service down. */
export async function connectNats(
  url: string,
  name: string,
  log: Logger,
  auth: NatsAuth = {},
): Promise<NatsConnection> {
  const nc = await connect({
    servers: url.split(','),
    name,
    ...(auth.user ? { user: auth.user, pass: auth.password, inboxPrefix: natsInboxPrefix(auth.user) } : {}),
    ...(auth.tlsCa ? { tls: { ca: readFileSync(auth.tlsCa, 'utf8') } } : {}),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    waitOnFirstConnect: true,
    // Without this every request builds an Error with a stack trace in case it fails, a cost on
    // every request (bench/README.md); a failed request is mapped to 503 without needing the trace.
    noAsyncTraces: true,
  });
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'error')
        log.warn({ nats: s.type, data: String(s.data) }, 'nats status');
    }
  })();
  return nc;
}

/** Readiness check of a NATS connection: open, and the server answers a round trip. */
export async function natsReady(nc: NatsConnection): Promise<void> {
  if (nc.isClosed()) throw new Error('closed');
  await nc.flush();
}

export { codec as jsonCodec };
