import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage, type Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';

const isAddress = (a: string | AddressInfo | null): a is AddressInfo => typeof a === 'object' && a !== null;

export type ReadinessCheck = () => Promise<void>;

/**
 * The small HTTP port of every service: `/healthz` (the process is alive), `/readyz` (every
 * dependency answers) and `/metrics` (Prometheus).
 */
export async function startOpsServer(opts: {
  host: string;
  port: number;
  metrics: Metrics;
  checks: Record<string, ReadinessCheck>;
  log: Logger;
  isShuttingDown: () => boolean;
}): Promise<{ port: number; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    void (async () => {
      const send = (status: number, body: string, type = 'application/json') => {
        res.writeHead(status, { 'content-type': type });
        res.end(body);
      };
      if (req.url === '/healthz') return send(200, JSON.stringify({ status: 'ok' }));
      if (req.url === '/readyz') {
        if (opts.isShuttingDown()) return send(503, JSON.stringify({ status: 'shutting_down' }));
        const results: Record<string, string> = {};
        let ready = true;
        await Promise.all(
          Object.entries(opts.checks).map(async ([name, check]) => {
            try {
              await withTimeout(check(), 2_000);
              results[name] = 'ok';
            } catch (err) {
              ready = false;
              results[name] = errorMessage(err) || 'failed';
            }
          }),
        );
        return send(ready ? 200 : 503, JSON.stringify({ status: ready ? 'ready' : 'not_ready', checks: results }));
      }
      if (req.url === '/metrics')
        return send(200, await opts.metrics.registry.metrics(), opts.metrics.registry.contentType);
      send(404, JSON.stringify({ status: 'not_found' }));
    })().catch((err) => {
      opts.log.error({ err }, 'ops request failed');
      res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(opts.port, opts.host, resolve));
  const address = server.address();
  const port = isAddress(address) ? address.port : opts.port;
  return {
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('timed out')), ms);
    p.then(
      (v) => (clearTimeout(t), resolve(v)),
      (e) => (clearTimeout(t), reject(e)),
    );
  });
}
