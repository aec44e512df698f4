// Local mail sink for `npm start`: an SMTP server on 127.0.0.1 (MAIL_SINK_PORT, default 1025)
// that keeps every message. Each one is logged as one line (to stdout and var/mail.log) and saved
// whole under var/mail/ (readable by this user only: scripts/mail-store.mjs).
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { root } from './bootstrap.mjs';
import { mailStore } from './mail-store.mjs';

const port = Number(process.env.MAIL_SINK_PORT ?? 1025);
const store = mailStore(path.join(root, 'var'));

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  onData(stream, _session, callback) {
    simpleParser(stream)
      .then((mail) => {
        const to = Array.isArray(mail.to) ? mail.to.map((a) => a.text).join(', ') : (mail.to?.text ?? '');
        const line = store.save({ to, subject: mail.subject ?? '', text: (mail.text ?? '').trim() });
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
