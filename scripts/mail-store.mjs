// Where the local mail sink (scripts/mail-sink.mjs) keeps what it caught: one line per message in
// var/mail.log and each message whole under var/mail/. Those hold members' one-time codes, so only
// this user may read them: files 0600, the directory 0700 (also when made by an earlier version).
import { appendFileSync, chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export function mailStore(varDir) {
  const dir = path.join(varDir, 'mail');
  const logFile = path.join(varDir, 'mail.log');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  if (existsSync(logFile)) chmodSync(logFile, 0o600);
  let count = 0;
  return {
    dir,
    logFile,
    /** Keep one message; answers its log line. */
    save({ to, subject, text }) {
      count += 1;
      writeFileSync(path.join(dir, `${Date.now()}-${count}.txt`), `To: ${to}\nSubject: ${subject}\n\n${text}\n`, {
        mode: 0o600,
      });
      const line = `${new Date().toISOString()} mail to=${to} subject="${subject}" body="${text.replace(/\s+/g, ' ').slice(0, 160)}"`;
      appendFileSync(logFile, `${line}\n`, { mode: 0o600 });
      return line;
    },
  };
}
