import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Subjects } from '@loyalty/contracts';
import { connectAs, natsUserEnv } from '../../../test/support/nats.ts';
import { createTestDatabase } from '../../../test/support/system.ts';
import {
  commonEnv,
  createLogger,
  databaseEnv,
  Endpoints,
  jsonCodec,
  loadConfig,
  runService,
  startInOrder,
  withTransaction,
  type ServicePart,
} from '../src/index.ts';

/**
 * runService starts a declared service's caches, consumers, tasks and endpoints in that order and
 * stops them in the reverse order (endpoints first: no request is taken while the rest stops);
 * a part that fails to start stops those started before it. A service of no domain, against real
 * PostgreSQL and NATS.
 */
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let migrations: string;
let nc: NatsConnection;
const root = `t${randomBytes(5).toString('hex')}`;
const subjects = new Subjects(root);
const log = createLogger('referrals', 'silent');

beforeAll(async () => {
  database = await createTestDatabase();
  migrations = mkdtempSync(path.join(tmpdir(), 'loyalty-no-migrations-'));
  nc = await connectAs('admin');
});
afterAll(async () => {
  await nc?.close();
  await database?.drop();
  if (migrations) rmSync(migrations, { recursive: true, force: true });
});

const config = () =>
  loadConfig(z.object({ ...commonEnv, ...databaseEnv }), {
    ...natsUserEnv('referrals'),
    DATABASE_URL: database.url,
    SUBJECT_ROOT: root,
    OPS_PORT: '0',
    OPS_HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
  });

/** Whether the service answers its ping now. */
async function answers(): Promise<boolean> {
  try {
    const reply = await nc.request(subjects.op('referrals', 'system.ping'), jsonCodec.encode({ meta: {}, data: {} }), {
      timeout: 1_000,
    });
    return reply.data.length > 0;
  } catch {
    return false;
  }
}

describe('runService', () => {
  it('starts caches, consumers, tasks, endpoints in order and stops them in reverse', async () => {
    const events: string[] = [];
    const part = (name: string): ServicePart => ({
      start: async () => void events.push(`start ${name}${(await answers()) ? ' (served)' : ''}`),
      stop: async () => void events.push(`stop ${name}${(await answers()) ? ' (served)' : ''}`),
    });
    const running = await runService(
      {
        name: 'referrals',
        version: '1.0.0',
        migrationsDir: migrations,
        setup: async () => ({
          endpoints: new Endpoints('referrals'),
          caches: [part('cache')],
          consumers: [part('consumer 1'), part('consumer 2')],
          tasks: [part('task')],
          hooks: { answer: () => 42 },
          close: async () => void events.push('close'),
        }),
      },
      { config: config(), log },
    );
    expect(running.hooks.answer()).toBe(42); // typed: RunningService<{ answer(): number }>
    expect(await answers()).toBe(true);
    expect(events).toEqual(['start cache', 'start consumer 1', 'start consumer 2', 'start task']);
    await running.stop();
    expect(events.slice(4)).toEqual(['stop task', 'stop consumer 2', 'stop consumer 1', 'stop cache', 'close']);
  });

  it('a part that fails to start stops those started before it, and the start-up fails', async () => {
    const events: string[] = [];
    const part = (name: string, fails = false): ServicePart => ({
      start: () => {
        if (fails) throw new Error(`${name} cannot start`);
        events.push(`start ${name}`);
      },
      stop: () => void events.push(`stop ${name}`),
    });
    await expect(
      runService(
        {
          name: 'referrals',
          version: '1.0.0',
          migrationsDir: migrations,
          setup: async () => ({
            endpoints: new Endpoints('referrals'),
            caches: [part('cache')],
            consumers: [part('consumer'), part('broken', true)],
            tasks: [part('task')],
            hooks: {},
          }),
        },
        { config: config(), log },
      ),
    ).rejects.toThrow('broken cannot start');
    expect(events).toEqual(['start cache', 'start consumer', 'stop consumer', 'stop cache']);
    expect(await answers()).toBe(false);
  });

  it('runs the jobs a service declares: created in a transaction, woken, run once to their result', async () => {
    let wake: () => void = () => undefined;
    let create: (kind: string) => Promise<string> = async () => '';
    const running = await runService(
      {
        name: 'referrals',
        version: '1.0.0',
        migrationsDir: migrations,
        setup: async (rt) => {
          wake = () => rt.jobs.wake();
          create = (kind) =>
            withTransaction(rt.pool, (tx) => rt.jobs.store.create(tx, { tenantId: 7, kind, now: new Date() }));
          return {
            endpoints: new Endpoints('referrals'),
            caches: [],
            consumers: [],
            tasks: [],
            jobs: {
              hello: async (step) => {
                await step.succeed(undefined, {
                  done: 1,
                  total: 1,
                  result: { contentType: 'text/plain', data: Buffer.from(`hello ${step.tenantId}`) },
                });
                return 'finished';
              },
            },
            hooks: { store: rt.jobs.store },
          };
        },
      },
      { config: config(), log },
    );
    try {
      const id = await create('hello');
      wake();
      await expect.poll(async () => (await running.hooks.store.find(7, id))?.status).toBe('succeeded');
      expect((await running.hooks.store.resultPart(7, id, 0, new Date()))?.toString()).toBe('hello 7');
      expect(await running.runJobNow()).toBe(false); // nothing else queued
    } finally {
      await running.stop();
    }
  });

  it('startInOrder stops what it started in reverse, once', async () => {
    const events: string[] = [];
    const part = (name: string): ServicePart => ({
      start: () => void events.push(`start ${name}`),
      stop: () => void events.push(`stop ${name}`),
    });
    const stop = await startInOrder([part('a'), part('b'), part('c')]);
    await stop();
    await stop();
    expect(events).toEqual(['start a', 'start b', 'start c', 'stop c', 'stop b', 'stop a']);
  });
});
