import nodemailer, { type Transporter } from 'nodemailer';
import type { Logger } from '@loyalty/runtime';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Sends members' mail over SMTP; sandbox tenants' mail goes to the sandbox server (a sink). */
export class Mailer {
  private readonly live: Transporter;
  private readonly sandbox: Transporter;
  constructor(
    liveUrl: string,
    sandboxUrl: string,
    private readonly from: string,
    private readonly log: Logger,
    connections = 4,
  ) {
    // Pooled: connections stay open between mails instead of a new SMTP session per mail.
    const opts = { pool: true, maxConnections: connections, connectionTimeout: 5_000, greetingTimeout: 5_000, socketTimeout: 10_000 };
    this.live = nodemailer.createTransport(liveUrl, opts);
    this.sandbox = sandboxUrl === liveUrl ? this.live : nodemailer.createTransport(sandboxUrl, opts);
  }

  /** `log` is the request's (or event's) logger, so the line carries its request id. */
  async send(mail: Mail, sandbox: boolean, log: Logger = this.log): Promise<void> {
    const info = await (sandbox ? this.sandbox : this.live).sendMail({ from: this.from, ...mail });
    log.info({ messageId: info.messageId, sandbox }, 'mail sent');
  }

  close(): void {
    this.live.close();
    this.sandbox.close();
  }
}
