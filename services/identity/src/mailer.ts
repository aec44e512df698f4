import net from 'node:net';
import nodemailer, { type Transporter } from 'nodemailer';
import { parseConnectionUrl } from 'nodemailer/lib/shared/index.js';
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import type { Logger } from '@loyalty/runtime';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/**
 * Transport options for an SMTP URL: pooled, so connections stay open between mails instead of a
 * new SMTP session (and greeting delay) per mail, and for plain `smtp:` URLs a socket with Nagle's
 * algorithm off. nodemailer writes the end of a message in small pieces, and with Nagle on each
 * mail waited for the server's delayed ACK (~45 ms here, 100 mails 4.6 s; with TCP_NODELAY 0.25 s).
 * Settings the URL gives (`?maxConnections=2`, credentials, `smtps:`) win over these defaults.
 * Note: `createTransport(url, { pool: true })` would not pool (the object is message defaults).
 */
export function transportOptions(url: string, connections: number): SMTPPool.Options {
  const options: SMTPPool.Options = {
    pool: true,
    maxConnections: connections,
    connectionTimeout: 5_000,
    greetingTimeout: 5_000,
    socketTimeout: 10_000,
    ...(parseConnectionUrl(url) as Partial<SMTPPool.Options>),
  };
  if (!options.secure) {
    options.getSocket = (o, callback) => {
      const socket = net.connect({ host: o.host ?? 'localhost', port: Number(o.port) || 587, noDelay: true });
      socket.setTimeout(o.connectionTimeout ?? 5_000, () => socket.destroy(new Error('SMTP connection timed out')));
      socket.once('error', (err) => callback(err, undefined));
      socket.once('connect', () => {
        socket.setTimeout(0);
        socket.removeAllListeners('error'); // from here nodemailer's connection listens
        callback(null, { connection: socket });
      });
    };
  }
  return options;
}

/** What a mail is: a code the member waits for at the till, or a notification that can wait. */
export type MailKind = 'code' | 'notification';

/**
 * Sends members' mail over SMTP; sandbox tenants' mail goes to the sandbox server (a sink).
 * Codes and notifications go over pools of their own, so a code never queues behind a burst of
 * notifications (whose pace the notification consumers set: notifications.ts `notificationPace`).
 */
export class Mailer {
  private readonly transports = new Map<string, Transporter>();
  constructor(
    private readonly liveUrl: string,
    private readonly sandboxUrl: string,
    private readonly from: string,
    private readonly log: Logger,
    private readonly settings: { connections: number } = { connections: 4 },
  ) {}

  private transport(sandbox: boolean, kind: MailKind): Transporter {
    const url = sandbox ? this.sandboxUrl : this.liveUrl;
    const key = `${kind} ${url}`;
    let t = this.transports.get(key);
    if (!t) {
      t =
        kind === 'code'
          ? nodemailer.createTransport(transportOptions(url, 2))
          : nodemailer.createTransport(transportOptions(url, this.settings.connections));
      this.transports.set(key, t);
    }
    return t;
  }

  /** `log` is the request's (or event's) logger, so the line carries its request id. */
  async send(mail: Mail, sandbox: boolean, log: Logger = this.log, kind: MailKind = 'code'): Promise<void> {
    const info = await this.transport(sandbox, kind).sendMail({ from: this.from, ...mail });
    log.info({ messageId: info.messageId, sandbox }, 'mail sent');
  }

  close(): void {
    for (const t of this.transports.values()) t.close();
    this.transports.clear();
  }
}
