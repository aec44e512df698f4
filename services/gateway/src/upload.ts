import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { AppError, UPLOAD_CHUNK_BYTES, type Operation, type ReplyMessage } from '@loyalty/contracts';
import { callService, type NatsConnection } from '@loyalty/runtime';
import { sendFailure } from './envelope.ts';
import { header } from './headers.ts';

/**
 * Upload operations (`upload` in the contract): the body is a file, never parsed nor held whole.
 * Their routes live in a child context whose only body parser hands the request stream through,
 * so the JSON parser (and its body limit) never reads a file.
 */
export function addRoute(app: FastifyInstance, op: Operation, route: RouteOptions): void {
  if (!op.upload) {
    app.route(route);
    return;
  }
  void app.register(async (child) => {
    child.removeAllContentTypeParsers();
    child.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
    child.route(route);
  });
}

/** The media type of a request, lower-cased, without parameters (`text/csv; charset=utf-8` → `text/csv`). */
function mediaType(req: FastifyRequest): string {
  return ((header(req, 'content-type') ?? '').split(';')[0] ?? '').trim().toLowerCase();
}

const isStream = (v: unknown): v is Readable =>
  typeof v === 'object' && v !== null && Symbol.asyncIterator in v && 'pipe' in v;

/** Refuse and close: the client may still be sending a body nobody will read. */
function refuse(reply: FastifyReply, error: AppError | ReplyMessage): FastifyReply {
  reply.header('Connection', 'close');
  if (error instanceof AppError) return sendFailure(reply, error);
  if (!error.ok) return sendFailure(reply, error.error);
  return sendFailure(reply, new AppError('internal_error'));
}

/**
 * Forward an upload: the body read as it arrives, in pieces of {@link UPLOAD_CHUNK_BYTES} (base64
 * in one NATS request each, under the 1 MB message limit), one piece in flight at a time, so the
 * client is read only as fast as the service stores. The service answers every piece; its answer
 * to the last one (`last: true`) is the operation's answer. A refusal of any piece (the service
 * checks the kind, card and tenant on the first) ends the upload with that failure.
 */
export async function streamUpload(
  deps: { nc: NatsConnection; timeoutMs: number },
  op: Operation & { upload: NonNullable<Operation['upload']> },
  subject: string,
  message: { meta: unknown; data: Record<string, unknown> },
  req: FastifyRequest,
  reply: FastifyReply,
  status: 200 | 202,
): Promise<FastifyReply> {
  const type = mediaType(req);
  if (!op.upload.contentTypes.includes(type))
    return refuse(
      reply,
      new AppError('unsupported_media_type', `Send the file as ${op.upload.contentTypes.join(', ')}.`),
    );
  const declared = Number(header(req, 'content-length') ?? 0);
  if (declared > op.upload.maxBytes) return refuse(reply, new AppError('payload_too_large'));
  const id = randomUUID();
  let seq = 0;
  const send = (data: Buffer, last: boolean) =>
    callService(
      deps.nc,
      subject,
      {
        ...message,
        data: { ...message.data, upload: { id, seq: seq++, data: data.toString('base64'), last, content_type: type } },
      },
      req.id,
      deps.timeoutMs,
      undefined,
      req.span,
    );
  let held: Buffer[] = [];
  let heldBytes = 0;
  let total = 0;
  const body = isStream(req.body) ? req.body : undefined;
  for await (const piece of body ?? []) {
    const chunk = Buffer.isBuffer(piece) ? piece : Buffer.from(String(piece));
    total += chunk.length;
    if (total > op.upload.maxBytes) return refuse(reply, new AppError('payload_too_large'));
    held.push(chunk);
    heldBytes += chunk.length;
    while (heldBytes >= UPLOAD_CHUNK_BYTES) {
      const all = Buffer.concat(held);
      const answer = await send(all.subarray(0, UPLOAD_CHUNK_BYTES), false);
      if (!answer.ok) return refuse(reply, answer);
      const rest = all.subarray(UPLOAD_CHUNK_BYTES);
      held = [rest];
      heldBytes = rest.length;
    }
  }
  const answer = await send(Buffer.concat(held), true);
  if (!answer.ok) return sendFailure(reply, answer.error);
  return reply.code(status).send({ success: true, data: answer.data });
}
