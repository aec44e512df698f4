import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type { NatsConnection } from 'nats';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError, defineInternalOperations, httpStatusOf, Subjects } from '@loyalty/contracts';
import { connectAs } from '../../../test/support/nats.ts';
import { createTestDatabase } from '../../../test/support/system.ts';
import {
  callService,
  ContractViolationError,
  createPool,
  jsonCodec,
  ServiceClient,
  ServiceUnavailableError,
  withTransaction,
  type Logger,
} from '../src/index.ts';

/**
 * The service client tells a missing or slow service (retryable, 503) apart from a reply that
 * cannot be decoded or breaks its contract (a bug, 500, logged with the subject), and refuses to
 * call while a database transaction is open. Against a real NATS server.
 */
const subjects = new Subjects(`t${randomBytes(5).toString('hex')}`);
const ops = defineInternalOperations({
  count: {
    service: 'ledger',
    operation: 'internal.test.count',
    request: z.object({ n: z.number().int() }),
    reply: z.object({ n: z.number().int() }),
  },
});
const meta = { request_id: 'req-1', tenant_id: 1 };
const logged: { msg: string; subject?: string }[] = [];
const log: Logger = pino(
  { level: 'info' },
  new Writable({
    write(chunk: Buffer, _enc, done) {
      logged.push(JSON.parse(chunk.toString()) as { msg: string; subject?: string });
      done();
    },
  }),
);
let nc: NatsConnection;
let client: ServiceClient;
const subject = subjects.op('ledger', 'internal.test.count');

/** Answer the test subject with `reply(n)` (raw bytes) for the next requests. */
function respond(reply: (n: number) => Uint8Array | undefined) {
  return nc.subscribe(subject, {
    callback: (_err, msg) => {
      const { data } = jsonCodec.decode(msg.data) as { data: { n: number } };
      const out = reply(data.n);
      if (out) msg.respond(out);
    },
  });
}

beforeAll(async () => {
  nc = await connectAs('admin');
  client = new ServiceClient(nc, subjects, { timeoutMs: 300, log });
});
afterAll(async () => {
  await nc.drain();
});

describe('service client', () => {
  it('answers the reply typed by the operation, checked against its schema', async () => {
    const sub = respond((n) => jsonCodec.encode({ ok: true, data: { n: n + 1 } }));
    await expect(client.call(ops.count, meta, { n: 41 })).resolves.toEqual({ n: 42 });
    sub.unsubscribe();
  });

  it('throws a failure reply as the same AppError (code, message, details)', async () => {
    const sub = respond(() =>
      jsonCodec.encode({ ok: false, error: { code: 'insufficient_points', message: 'No.', points_balance: 3 } }),
    );
    const err = await client.call(ops.count, meta, { n: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).toBody()).toEqual({ code: 'insufficient_points', message: 'No.', points_balance: 3 });
    sub.unsubscribe();
  });

  it('no responders and a timeout are ServiceUnavailableError (503)', async () => {
    const none = await client.call(ops.count, meta, { n: 1 }).catch((e: unknown) => e);
    expect(none).toBeInstanceOf(ServiceUnavailableError);
    expect(httpStatusOf((none as AppError).code)).toBe(503);
    const sub = respond(() => undefined); // takes the request, never answers
    const slow = await client.call(ops.count, meta, { n: 1 }).catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(ServiceUnavailableError);
    sub.unsubscribe();
  });

  it('an undecodable reply and a reply breaking the contract are ContractViolationError (500), logged with the subject', async () => {
    logged.length = 0;
    let sub = respond(() => new TextEncoder().encode('not json {'));
    const garbled = await client.call(ops.count, meta, { n: 1 }).catch((e: unknown) => e);
    sub.unsubscribe();
    sub = respond(() => jsonCodec.encode({ ok: true, data: { n: 'seven' } }));
    const broken = await client.call(ops.count, meta, { n: 1 }).catch((e: unknown) => e);
    sub.unsubscribe();
    for (const err of [garbled, broken]) {
      expect(err).toBeInstanceOf(ContractViolationError);
      expect(httpStatusOf((err as AppError).code)).toBe(500);
    }
    expect(logged.filter((l) => l.subject === subject).map((l) => l.msg)).toEqual([
      'undecodable reply',
      'reply breaks its contract',
    ]);
  });

  it('callService (the gateway) answers an undecodable reply with internal_error, not 503', async () => {
    const sub = respond(() => new TextEncoder().encode('\u0000garbage'));
    const reply = await callService(nc, subject, { meta, data: { n: 1 } }, 'req-2', 300, log);
    sub.unsubscribe();
    expect(reply).toEqual({ ok: false, error: expect.objectContaining({ code: 'internal_error' }) });
  });

  it('refuses to call another service while a database transaction is open', async () => {
    let received = 0;
    const sub = respond((n) => {
      received += 1;
      return jsonCodec.encode({ ok: true, data: { n } });
    });
    const db = await createTestDatabase();
    const pool = createPool(db.url, 2, log, 'service-client-test');
    try {
      await expect(withTransaction(pool, () => client.call(ops.count, meta, { n: 1 }))).rejects.toThrow(
        /called while a database transaction is open/,
      );
      expect(received).toBe(0);
    } finally {
      sub.unsubscribe();
      await pool.end();
      await db.drop();
    }
  });
});
