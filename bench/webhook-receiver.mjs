// The benchmark's webhook receiver, in a process of its own (not in the load generator's): a
// healthy merchant endpoint that answers 200 at once and remembers, per request, the path, the
// event id, the event's created_at and when it arrived. Prints its port on stdout; the harness
// reads and clears the records over HTTP (GET /_records, POST /_reset); stops on SIGTERM.
import http from 'node:http';
import { performance } from 'node:perf_hooks';

let records = [];
const server = http.createServer((req, res) => {
  if (req.url === '/_records') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify(records));
  }
  if (req.url === '/_reset') {
    records = [];
    res.writeHead(204);
    return res.end();
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const at = performance.timeOrigin + performance.now();
    try {
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      records.push([req.url, event.id, Date.parse(event.created_at), at]);
    } catch {
      records.push([req.url, null, NaN, at]);
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  });
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
