import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '@loyalty/contracts';
import { sendFailure, sendReply } from '../src/envelope.ts';

/**
 * A `validation_error` lists each refused (field, message) pair once, whichever side found it: the
 * gateway's own refusal or a service's answer passed on (a value refused by two checks with the
 * same words, as `points: 1e300` on a staff adjustment was reported to be).
 */
const twice = [
  { field: 'points', message: 'Too big: expected number to be <=1000000000' },
  { field: 'points', message: 'Too big: expected int to be <=9007199254740991' },
  { field: 'points', message: 'Too big: expected number to be <=1000000000' },
  { field: 'reason', message: 'is required' },
  { field: 'points', message: 'Too big: expected int to be <=9007199254740991' },
];
const once = twice.slice(0, 2).concat(twice[3]!);

let app: FastifyInstance;
beforeAll(async () => {
  app = Fastify();
  app.get('/gateway', async (_req, reply) =>
    sendFailure(reply, new AppError('validation_error', 'Invalid request: points, reason.', { fields: twice })),
  );
  app.get('/service', async (_req, reply) =>
    sendReply(reply, {
      ok: false,
      error: { code: 'validation_error', message: 'The request is not valid.', fields: twice },
    }),
  );
});
afterAll(async () => app?.close());

describe('failure envelope', () => {
  it.each(['/gateway', '/service'])('lists each (field, message) pair once (%s)', async (url) => {
    const r = await app.inject({ method: 'GET', url });
    expect(r.statusCode).toBe(400);
    const body = r.json<{ success: boolean; error: { code: string; fields: unknown[] } }>();
    expect(body.success).toBe(false);
    expect(body.error.code).toBe('validation_error');
    expect(body.error.fields).toEqual(once);
  });

  it('leaves other failures as they are', async () => {
    const other = Fastify();
    other.get('/', async (_req, reply) =>
      sendFailure(reply, new AppError('rate_limited', undefined, { retry_after_seconds: 3 })),
    );
    const r = await other.inject({ method: 'GET', url: '/' });
    expect(r.statusCode).toBe(429);
    expect(r.headers['retry-after']).toBe('3');
    expect(r.json<{ error: Record<string, unknown> }>().error).toEqual({
      code: 'rate_limited',
      message: 'Too many requests; slow down.',
      retry_after_seconds: 3,
    });
    await other.close();
  });
});
