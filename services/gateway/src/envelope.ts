import type { FastifyReply } from 'fastify';
import { AppError, type ErrorBody, httpStatusOf, type ReplyMessage } from '@loyalty/contracts';

/**
 * Failure envelope `{ success: false, error }` with the catalogue status (and Retry-After when told).
 * Every failure of the HTTP edge goes through here, the gateway's own and those a service answered,
 * so this is where a `validation_error`'s `fields` lose repeated entries: a field refused twice for
 * the same reason (two checks of one value, the gateway's and a service's) is listed once.
 */
export function sendFailure(reply: FastifyReply, error: ErrorBody | AppError): FastifyReply {
  const body = distinctFields(error instanceof AppError ? error.toBody() : error);
  const retryAfter = body.retry_after_seconds;
  if (typeof retryAfter === 'number') reply.header('Retry-After', String(retryAfter));
  return reply.code(httpStatusOf(body.code)).send({ success: false, error: body });
}

/** The body with each (field, message) pair of its `fields` once, in the order first given. */
export function distinctFields(body: ErrorBody): ErrorBody {
  const { fields } = body;
  if (!Array.isArray(fields) || fields.length < 2) return body;
  const seen = new Set<string>();
  const distinct = fields.filter((f: unknown) => {
    if (typeof f !== 'object' || f === null) return true;
    const key = JSON.stringify([Reflect.get(f, 'field'), Reflect.get(f, 'message')]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return distinct.length === fields.length ? body : { ...body, fields: distinct };
}

/** Success envelope `{ success: true, data }` (plus a top-level `message` when the service gave one). */
export function sendReply(reply: FastifyReply, message: ReplyMessage, status: 200 | 202 = 200): FastifyReply {
  if (!message.ok) return sendFailure(reply, message.error);
  // A replayed response is the first one byte for byte; the header tells a client it was a replay.
  if (message.replayed) reply.header('Idempotent-Replayed', 'true');
  return reply
    .code(status)
    .send(
      message.message === undefined
        ? { success: true, data: message.data }
        : { success: true, message: message.message, data: message.data },
    );
}
