// A dependency-free mail catcher, the stand-in for Mailpit when its image cannot be pulled: SMTP
// on 1025 (enough of RFC 5321 for nodemailer: EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT;
// no STARTTLS, no AUTH), HTTP on 8025: GET /readyz, GET /api/v1/messages (newest first, like
// Mailpit's list, with the raw message). `node mail-catcher.mjs readyz` is the health check.
import http from 'node:http';
import net from 'node:net';

const SMTP_PORT = Number(process.env.MP_SMTP_PORT ?? 1025);
const HTTP_PORT = Number(process.env.MP_UI_PORT ?? 8025);
const KEEP = 1000;

if (process.argv[2] === 'readyz') {
  fetch(`http://127.0.0.1:${HTTP_PORT}/readyz`).then(
    (r) => process.exit(r.ok ? 0 : 1),
    () => process.exit(1),
  );
} else {
  /** @type {{ ID: string, Created: string, From: string, To: string[], Subject: string, Raw: string }[]} */
  const messages = [];
  let total = 0;

  const smtp = net.createServer((socket) => {
    socket.setEncoding('utf8');
    const reply = (line) => socket.write(`${line}\r\n`);
    let from = '';
    let to = [];
    let inData = false;
    let data = [];
    let buffer = '';
    reply('220 mail-catcher ESMTP');
    socket.on('data', (chunk) => {
      buffer += chunk;
      let end;
      while ((end = buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (inData) {
          if (line === '.') {
            inData = false;
            const raw = data.join('\r\n');
            const subject = /^Subject:\s*(.*)$/im.exec(raw)?.[1] ?? '';
            total += 1;
            messages.unshift({
              ID: String(total),
              Created: new Date().toISOString(),
              From: from,
              To: to,
              Subject: subject,
              Raw: raw,
            });
            messages.length = Math.min(messages.length, KEEP);
            reply(`250 OK queued as ${total}`);
          } else data.push(line.startsWith('..') ? line.slice(1) : line);
          continue;
        }
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO') socket.write('250-mail-catcher\r\n250-8BITMIME\r\n250-SMTPUTF8\r\n250 SIZE 10485760\r\n');
        else if (verb === 'HELO') reply('250 mail-catcher');
        else if (verb === 'MAIL') {
          from = /<([^>]*)>/.exec(line)?.[1] ?? '';
          to = [];
          reply('250 OK');
        } else if (verb === 'RCPT') {
          to.push(/<([^>]*)>/.exec(line)?.[1] ?? '');
          reply('250 OK');
        } else if (verb === 'DATA') {
          inData = true;
          data = [];
          reply('354 End data with <CR><LF>.<CR><LF>');
        } else if (verb === 'RSET') {
          from = '';
          to = [];
          reply('250 OK');
        } else if (verb === 'NOOP') reply('250 OK');
        else if (verb === 'QUIT') {
          reply('221 Bye');
          socket.end();
        } else reply('502 Command not implemented');
      }
    });
    socket.on('error', () => socket.destroy());
  });

  const web = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname === '/readyz' || url.pathname === '/livez') {
      res.writeHead(200).end('ok');
    } else if (url.pathname === '/api/v1/messages') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ total, count: messages.length, messages }));
    } else res.writeHead(404).end();
  });

  smtp.listen(SMTP_PORT, '0.0.0.0');
  web.listen(HTTP_PORT, '0.0.0.0', () => console.log(`mail catcher: smtp :${SMTP_PORT}, http :${HTTP_PORT}`));
  const stop = () => {
    smtp.close();
    web.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 1000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
