import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, type ConnectionOptions, type NatsConnection } from 'nats';
import { natsInboxPrefix, type NatsUser } from '@loyalty/runtime';

/**
 * The authenticated NATS server of this run (LOYALTY_NATS_URL, which the test suite's global
 * set-up sets: this checkout's own nats-server, or a container) and its users' passwords from
 * var/secrets.json.
 */
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface LocalNats {
  url: string;
  passwords: Record<NatsUser | 'admin', string>;
}

export function localNats(): LocalNats {
  const serverFile = path.join(repoRoot, 'var', 'nats', 'server.json');
  const secretsFile = path.join(repoRoot, 'var', 'secrets.json');
  if (!existsSync(secretsFile) || (!process.env.LOYALTY_NATS_URL && !existsSync(serverFile)))
    throw new Error('no local NATS credentials (var/secrets.json); run `npm test` or `npm start` once');
  const url = process.env.LOYALTY_NATS_URL ?? (JSON.parse(readFileSync(serverFile, 'utf8')) as { url: string }).url;
  const { nats } = JSON.parse(readFileSync(secretsFile, 'utf8')) as { nats: LocalNats['passwords'] };
  return { url, passwords: nats };
}

/** The environment a service (or the gateway) needs to connect as its own NATS user. */
export function natsUserEnv(user: NatsUser, url?: string): Record<string, string> {
  const nats = localNats();
  return { NATS_URL: url ?? nats.url, NATS_USER: user, NATS_PASSWORD: nats.passwords[user] };
}

/** Connect as one of the platform's users (`admin` is the unrestricted one of the test harness). */
export function connectAs(
  user: NatsUser | 'admin',
  opts: { url?: string } & Partial<ConnectionOptions> = {},
): Promise<NatsConnection> {
  const nats = localNats();
  const { url, ...rest } = opts;
  return connect({
    servers: url ?? nats.url,
    user,
    pass: nats.passwords[user],
    ...(user === 'admin' ? {} : { inboxPrefix: natsInboxPrefix(user) }),
    ...rest,
  });
}
