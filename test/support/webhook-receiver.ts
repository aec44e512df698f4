import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One webhook request as the receiver got it. */
export interface ReceivedWebhook {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The raw body, exactly as sent (what the signature covers). */
  body: string;
  /** When it arrived (ms since the epoch). */
  at: number;
  event: { id: string; type: string; created_at: string; tenant_id: number; data: Record<string, unknown> };
}

export interface ReceiverAnswer {
  status?: number;
  /** Wait this long before answering (a slow receiver). */
  delayMs?: number;
  /** Never answer (a hanging receiver); the sender's timeout ends it. */
  hang?: boolean;
  body?: string;
}

/**
 * A real HTTP server standing in for a merchant's system: it records every request and answers as
 * told (200 by default; per request a status, a delay, or no answer at all).
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  private answer: (req: ReceivedWebhook, n: number) => ReceiverAnswer = () => ({ status: 200 });
  private server: http.Server | undefined;
  private readonly hanging = new Set<http.ServerResponse>();
  private waiters: (() => void)[] = [];
  port = 0;

  async start(host = '127.0.0.1'): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let event: ReceivedWebhook['event'];
        try {
          event = JSON.parse(body) as ReceivedWebhook['event'];
        } catch {
          event = { id: '', type: '', created_at: '', tenant_id: 0, data: {} };
        }
        const received: ReceivedWebhook = { path: req.url ?? '/', headers: req.headers, body, at: Date.now(), event };
        this.received.push(received);
        const a = this.answer(received, this.received.length);
        this.waiters.splice(0).forEach((wake) => wake());
        if (a.hang) {
          this.hanging.add(res);
          return;
        }
        const send = () => {
          res.writeHead(a.status ?? 200, { 'content-type': 'text/plain' });
          res.end(a.body ?? 'ok');
        };
        if (a.delayMs) setTimeout(send, a.delayMs);
        else send();
      });
    });
    this.server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => this.server!.listen(0, host, resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** How to answer from now on (`n`: this request's number, from 1). */
  respond(answer: (req: ReceivedWebhook, n: number) => ReceiverAnswer): void {
    this.answer = answer;
  }

  /** The requests (so far) that `match`, once there are at least `count` of them. */
  async waitFor(match: (r: ReceivedWebhook) => boolean, count = 1, timeoutMs = 20_000): Promise<ReceivedWebhook[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.filter(match);
      if (found.length >= count) return found;
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `waited ${timeoutMs} ms for ${count} webhook(s); got ${found.length} (of ${this.received.length} in all)`,
        );
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 500));
        this.waiters.push(() => (clearTimeout(t), resolve()));
      });
    }
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
