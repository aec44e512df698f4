// Local mail sink for `npm start`: an SMTP server on 127.0.0.1 (MAIL_SINK_PORT, default 1025)
// that keeps every message. Each one is logged as one line (to stdout and var/mail.log) and saved
// whole under var/mail/.
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { root } from './bootstrap.mjs';

const port = Number(process.env.MAIL_SINK_PORT ?? 1025);
const dir = path.join(root, 'var', 'mail');
mkdirSync(dir, { recursive: true });
let count = 0;

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  onData(stream, _session, callback) {
    simpleParser(stream)
      .then((mail) => {
        count += 1;
        const to = Array.isArray(mail.to) ? mail.to.map((a) => a.text).join(', ') : (mail.to?.text ?? '');
        const text = (mail.text ?? '').trim();
        const file = path.join(dir, `${Date.now()}-${count}.txt`);
        writeFileSync(file, `To: ${to}\nSubject: ${mail.subject ?? ''}\n\n${text}\n`);
        const line = `${new Date().toISOString()} mail to=${to} subject="${mail.subject ?? ''}" body="${text.replace(/\s+/g, ' ').slice(0, 160)}"`;
        appendFileSync(path.join(root, 'var', 'mail.log'), `${line}\n`);
        console.log(`[mail] ${line}`);
        callback();
      })
      .catch(callback);
  },
});
server.listen(port, '127.0.0.1', () =>
  console.log(`[mail] sink listening on smtp://127.0.0.1:${port} (log: var/mail.log)`),
);
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
