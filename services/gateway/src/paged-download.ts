import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { callPage, type NatsConnection } from '@loyalty/runtime';
import { sendFailure } from './envelope.ts';

/**
 * A paged download (`pagedDownload` in the contract): the owning service writes the file page by
 * page (each at most 512 KB, the bytes as they are in one NATS reply, described in a header) and
 * says where the next page starts (`next`, a cursor only it reads). The first page's failure is
 * the answer (the failure envelope); after it the pages are streamed as they come. The next page
 * is asked for while the one before is written, and the one after that only once the client has
 * taken it (the stream's backpressure), so the gateway holds at most two pages whatever the
 * file's size, and a client that stops reading stops the service's reads too. A page that fails
 * mid-way ends the body without its last chunk: the client sees an incomplete transfer, never a
 * short file that looks whole. The answer is always chunked, without Content-Length, even when the
 * file is one page.
 */
export async function streamPages(
  deps: { nc: NatsConnection; timeoutMs: number },
  subject: string,
  message: { meta: unknown; data: unknown },
  req: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const data = typeof message.data === 'object' && message.data !== null ? message.data : {};
  const page = (cursor: string | null) =>
    callPage(deps.nc, subject, { ...message, data: { ...data, cursor } }, req.id, deps.timeoutMs, undefined, req.span);
  const first = await page(null);
  if (!first.ok) return sendFailure(reply, first.error);
  const { page: head, body: headBody } = first;
  reply
    .code(200)
    .header('content-type', head.content_type)
    .header('content-disposition', `attachment; filename="${head.filename}"`);
  const bytes = (body: Uint8Array) => Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  // A file of one page is streamed too (a Buffer would be sent with a Content-Length), and the
  // framing is said outright: Node frames a body that never wrote a byte (an empty file) with
  // Content-Length: 0. So the answer is chunked whatever its size, as documented (HTTP/1.0 has no
  // chunks: its body ends with the connection, as Node does by itself).
  if (req.raw.httpVersion !== '1.0') reply.header('transfer-encoding', 'chunked');
  async function* pages(): AsyncGenerator<Buffer> {
    let current = { page: head, body: headBody };
    for (;;) {
      const cursor = current.page.next;
      // Asked for now, while this page is written; awaited only after the client took this one.
      const coming = cursor === null ? undefined : page(cursor);
      // A client gone before it is awaited leaves it unobserved: no unhandled rejection.
      coming?.catch(() => undefined);
      yield bytes(current.body);
      if (!coming) return;
      const next = await coming;
      if (!next.ok) throw new Error(`paged download ${subject}: ${next.error.code}: ${next.error.message}`);
      current = next;
    }
  }
  // Not object mode, a high-water mark of one byte: a page is read only once the last one was
  // handed on (and the response pipe pauses the stream while the socket is full).
  return reply.send(Readable.from(pages(), { objectMode: false, highWaterMark: 1 }));
}
