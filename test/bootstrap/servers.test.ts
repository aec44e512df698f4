import { describe, expect, it } from 'vitest';
import { missingServersMessage, missingWhere, serverAddresses } from '../../scripts/bootstrap.mjs';

/**
 * `npm start` and `npm test` on a machine without the servers and without Docker: the message says,
 * per missing server, what is missing and what to install on Debian/Ubuntu and on macOS, in at
 * most three lines, and that Docker would do instead.
 */
describe('the message for missing servers', () => {
  const all = [
    { kind: 'postgres', where: missingWhere('postgres', 'postgres://postgres@127.0.0.1:5999/postgres') },
    { kind: 'nats', where: missingWhere('nats', null) },
    { kind: 'redis', where: missingWhere('redis', 'redis://127.0.0.1:6999') },
  ] as const;
  const message = missingServersMessage([...all]);
  const lines = message.split('\n');

  it('names each missing server with its address (or the binary) and the variable that moves it', () => {
    expect(message).toContain('PostgreSQL: nothing answers on 127.0.0.1:5999 (LOYALTY_POSTGRES_URL)');
    expect(message).toContain('Redis: nothing answers on 127.0.0.1:6999 (LOYALTY_REDIS_URL)');
    expect(message).toContain('NATS: `nats-server` is not installed');
    expect(missingWhere('nats', 'nats://10.0.0.5:4333')).toBe('nothing answers on 10.0.0.5:4333 (LOYALTY_NATS_URL)');
  });

  it('gives the Debian/Ubuntu and macOS install commands, three lines per server', () => {
    const blocks = new Map<string, string[]>();
    let current = '';
    for (const line of lines.slice(1, -1)) {
      if (/^ {2}\S/.test(line)) blocks.set((current = line.trim().split(':')[0]!), [line]);
      else blocks.get(current)!.push(line);
    }
    expect([...blocks.keys()]).toEqual(['PostgreSQL', 'NATS', 'Redis']);
    for (const [name, block] of blocks) expect(block.length, name).toBeLessThanOrEqual(3);
    expect(blocks.get('PostgreSQL')!.join('\n')).toMatch(
      /Debian\/Ubuntu: sudo apt-get install postgresql\n.*macOS: +brew install postgresql@16/,
    );
    expect(blocks.get('NATS')!.join('\n')).toMatch(/apt-get install nats-server\n.*brew install nats-server/);
    expect(blocks.get('Redis')!.join('\n')).toMatch(/apt-get install redis-server\n.*brew install redis/);
  });

  it('lists only the missing ones and offers Docker for all of them', () => {
    const one = missingServersMessage([all[2]]);
    expect(one).not.toContain('PostgreSQL');
    expect(one).not.toContain('NATS');
    expect(one.split('\n')).toHaveLength(5);
    expect(one.split('\n').at(-1)).toMatch(/Docker/);
    expect(lines[0]).toMatch(/no Docker engine answers/);
  });
});

describe('the configured addresses (one set of variables for npm start and npm test)', () => {
  it("defaults to the local servers and this checkout's own NATS", () => {
    expect(serverAddresses({})).toEqual({
      postgres: 'postgres://postgres@127.0.0.1:5432/postgres',
      redis: 'redis://127.0.0.1:6379',
      nats: null,
    });
  });

  it('reads LOYALTY_POSTGRES_URL, LOYALTY_REDIS_URL and LOYALTY_NATS_URL', () => {
    expect(
      serverAddresses({
        LOYALTY_POSTGRES_URL: 'postgres://me@db:5433/postgres',
        LOYALTY_REDIS_URL: 'redis://cache:6380',
        LOYALTY_NATS_URL: 'nats://bus:4333',
      }),
    ).toEqual({ postgres: 'postgres://me@db:5433/postgres', redis: 'redis://cache:6380', nats: 'nats://bus:4333' });
  });
});
