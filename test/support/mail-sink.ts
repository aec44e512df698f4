import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface CapturedMail {
  to: string;
  subject: string;
  text: string;
  /** The HTML part ('' when the mail has none). */
  html: string;
  /** When it arrived (ms since the epoch). */
  at: number;
  /** Its header lines by lower-case name (the value as written, after the colon). */
  headers: Record<string, string>;
}

/** A real SMTP server inside the test: the services send to it over TCP and the test reads what arrived. */
export class MailSink {
  readonly messages: CapturedMail[] = [];
  /** SMTP connections opened to this sink so far. */
  connections = 0;
  /**
   * How long the sink takes to answer a message's DATA (a slow mail server), by message; it is
   * recorded when answered. 0 by default.
   */
  delay: (mail: { to: string; subject: string }) => number = () => 0;
  /** Whether the sink refuses a message (550, not recorded): a mail server that fails. */
  refuse: (mail: { to: string; subject: string }) => boolean = () => false;
  private waiters: (() => void)[] = [];
  private server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onConnect: (_session, callback) => {
      this.connections += 1;
      callback();
    },
    onData: (stream, _session, callback) => {
      simpleParser(stream)
        .then(async (mail) => {
          const to = Array.isArray(mail.to) ? mail.to[0]?.text : mail.to?.text;
          const wait = this.delay({ to: to ?? '', subject: mail.subject ?? '' });
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
          if (this.refuse({ to: to ?? '', subject: mail.subject ?? '' })) {
            callback(Object.assign(new Error('Mailbox unavailable'), { responseCode: 550 }));
            return;
          }
          const headers = Object.fromEntries(
            mail.headerLines.map((h) => [h.key.toLowerCase(), h.line.slice(h.line.indexOf(':') + 1).trim()]),
          );
          this.messages.push({
            to: to ?? '',
            subject: mail.subject ?? '',
            text: mail.text ?? '',
            html: typeof mail.html === 'string' ? mail.html : '',
            at: Date.now(),
            headers,
          });
          this.waiters.splice(0).forEach((w) => w());
          callback();
        })
        .catch(callback);
    },
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `smtp://127.0.0.1:${(this.server.server.address() as AddressInfo).port}`;
  }

  /** Wait for a message to `to` matching `predicate`, up to `timeoutMs`. */
  async waitFor(
    to: string,
    predicate: (m: CapturedMail) => boolean = () => true,
    timeoutMs = 5_000,
  ): Promise<CapturedMail> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.find((m) => m.to.includes(to) && predicate(m));
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no mail to ${to} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
  }

  /** The newest 6-digit code mailed to `to`. */
  async codeFor(to: string, after = 0): Promise<string> {
    const mail = await this.waitFor(to, (m) => this.messages.indexOf(m) >= after && /\b\d{6}\b/.test(m.text));
    return /\b(\d{6})\b/.exec(mail.text)![1]!;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
