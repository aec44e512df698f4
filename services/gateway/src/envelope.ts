import type { FastifyReply } from 'fastify';
import { AppError, type ErrorBody, httpStatusOf, type ReplyMessage } from '@loyalty/contracts';

/** Failure envelope `{ success: false, error }` with the catalogue status (and Retry-After when told). */
export function sendFailure(reply: FastifyReply, error: ErrorBody | AppError): FastifyReply {
  const body = error instanceof AppError ? error.toBody() : error;
  const retryAfter = body.retry_after_seconds;
  if (typeof retryAfter === 'number') reply.header('Retry-After', String(retryAfter));
  return reply.code(httpStatusOf(body.code)).send({ success: false, error: body });
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
