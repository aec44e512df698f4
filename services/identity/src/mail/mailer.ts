import { createHash, randomUUID } from 'node:crypto';
import net from 'node:net';
import nodemailer, { type Transporter } from 'nodemailer';
import { parseConnectionUrl } from 'nodemailer/lib/shared/index.js';
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import { inSpan, inTransaction, SpanKind, type Logger, type Pool } from '@loyalty/runtime';
import { routeOf, type TenantMail } from './messages.ts';
import type { SmtpSecrets } from './smtp-secrets.ts';
import { MAIL_SUBJECT_MAX, mailText } from '../domain/mail-text.ts';

export interface Mail {
  to: string;
  subject: string;
  text: string;
  /** The HTML part (mail/render): a message is sent as text and HTML alternatives. */
  html?: string;
  /** Extra headers (a marketing mail's List-Unsubscribe and List-Unsubscribe-Post), built by us, never from input. */
  headers?: Record<string, string>;
}

/**
 * Transport options for an SMTP URL: pooled, so connections stay open between mails instead of a
 * new SMTP session (and greeting delay) per mail, and for plain `smtp:` URLs a socket with Nagle's
 * algorithm off. nodemailer writes the end of a message in small pieces, and with Nagle on each
 * mail waited for the server's delayed ACK (~45 ms here, 100 mails 4.6 s; with TCP_NODELAY 0.25 s).
 * Settings the URL gives (`?maxConnections=2`, credentials, `smtps:`) win over these defaults.
 * Note: `createTransport(url, { pool: true })` would not pool (the object is message defaults).
 */
export function transportOptions(url: string, connections: number, socketTimeout = 10_000): SMTPPool.Options {
  const options: SMTPPool.Options = {
    pool: true,
    maxConnections: connections,
    connectionTimeout: 5_000,
    greetingTimeout: 5_000,
    socketTimeout,
    ...parseConnectionUrl(url),
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

/** Why a send failed, for the log line (nodemailer rejects with an Error; anything else is shown as is). */
export function mailError(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Where a tenant's mail comes from and goes through (mail/messages.ts `routeOf`): the From display
 * name and address, a Reply-To, and the merchant's own SMTP server when it set one.
 */
export interface MailRoute {
  fromName?: string | undefined;
  fromAddress?: string | undefined;
  replyTo?: string | undefined;
  smtp?: { host: string; port: number; secure: boolean; username: string | null; password: string | null } | undefined;
}

/** The SMTP URL of a tenant's own server. */
export function smtpUrl(smtp: NonNullable<MailRoute['smtp']>): string {
  const auth = smtp.username
    ? `${encodeURIComponent(smtp.username)}${smtp.password ? `:${encodeURIComponent(smtp.password)}` : ''}@`
    : '';
  return `${smtp.secure ? 'smtps' : 'smtp'}://${auth}${smtp.host}:${smtp.port}`;
}

/** The address part of `Name <address>` (or the whole text when it is a bare address). */
export function addressOf(from: string): string {
  return /<([^>]+)>/.exec(from)?.[1]?.trim() ?? from.trim();
}

/** What a mail is: a code the member waits for at the till, or a notification that can wait. */
export type MailKind = 'code' | 'notification';

/**
 * Sends members' mail over SMTP; sandbox tenants' mail goes to the sandbox server (a sink), and
 * without one (`sandboxUrl` undefined) it is not sent at all, only logged without its body: a
 * sandbox tenant's members are test data, often real people's addresses typed in while trying the
 * API, and their codes are in the API's answers anyway. Never to the live server by default.
 * Codes and notifications go over pools of their own, so a code never queues behind a burst of
 * notifications (whose pace the notification consumers set: notifications.ts `notificationPace`).
 */
export class Mailer {
  private readonly transports = new Map<string, Transporter>();
  /** Transports of tenants' own servers kept open at most (the oldest is closed first). */
  private static readonly MAX_TRANSPORTS = 200;
  constructor(
    private readonly liveUrl: string,
    private readonly sandboxUrl: string | undefined,
    private readonly from: string,
    private readonly log: Logger,
    private readonly settings: { connections: number } = { connections: 4 },
    /** Opens tenants' sealed SMTP passwords (`sendAs`). */
    private readonly secrets?: { pool: Pool; box: SmtpSecrets },
  ) {}

  /** A tenant's mail: from its name and address, through its own server when it set one. */
  async sendAs(tenant: TenantMail, mail: Mail, log: Logger = this.log, kind: MailKind = 'code'): Promise<void> {
    const route = this.secrets ? await routeOf(this.secrets.pool, this.secrets.box, tenant) : {};
    await this.send(mail, tenant.sandbox, log, kind, route);
  }

  private transport(url: string, kind: MailKind): Transporter {
    // Keyed by a hash: a tenant's URL holds its SMTP password.
    const key = `${kind} ${createHash('sha256').update(url).digest('hex')}`;
    let t = this.transports.get(key);
    if (!t) {
      if (this.transports.size >= Mailer.MAX_TRANSPORTS) {
        const [oldest] = this.transports;
        if (oldest) {
          oldest[1].close();
          this.transports.delete(oldest[0]);
        }
      }
      t =
        kind === 'code'
          ? nodemailer.createTransport(transportOptions(url, 2))
          : // Notifications are sent outside any transaction, by the senders: a slow server is waited
            // for (up to a minute of silence), since waiting holds nothing but the sender's turn.
            nodemailer.createTransport(transportOptions(url, this.settings.connections, 60_000));
      this.transports.set(key, t);
    }
    return t;
  }

  /** `log` is the request's (or event's) logger, so the line carries its request id. */
  async send(
    mail: Mail,
    sandbox: boolean,
    log: Logger = this.log,
    kind: MailKind = 'code',
    route: MailRoute = {},
  ): Promise<void> {
    // No SMTP conversation while a database transaction is open (a slow server would hold the
    // connection): refused in development and the tests, like a NATS call (`inTransaction`).
    if (inTransaction()) throw new Error('mail sent inside a database transaction');
    // A sandbox tenant's mail goes to the sandbox server whatever server the tenant set.
    const url = sandbox ? this.sandboxUrl : route.smtp ? smtpUrl(route.smtp) : this.liveUrl;
    if (url === undefined) {
      log.info({ sandbox, kind }, 'sandbox mail not sent (no SANDBOX_SMTP_URL)');
      return;
    }
    // A subject is one header line: no CR/LF that would start another (the templates keep
    // member-supplied text out of subjects; this holds for any future one).
    const subject = mailText(mail.subject, MAIL_SUBJECT_MAX);
    const transport = this.transport(url, kind);
    // A span of the operation or event that asked for the mail (with tracing on); no addresses in it.
    const info = await inSpan(
      `smtp send ${kind}`,
      { kind: SpanKind.CLIENT, attributes: { 'loyalty.mail.kind': kind, 'loyalty.mail.sandbox': sandbox } },
      () => transport.sendMail({ ...this.envelope(route), ...mail, subject }),
    );
    log.info({ messageId: info.messageId, sandbox }, 'mail sent');
  }

  /**
   * The deliverability headers: a stable From per tenant (its name, its address or the platform's),
   * a Reply-To when it set one, a Message-ID in the From address's domain (nodemailer adds Date).
   */
  private envelope(route: MailRoute) {
    const address = route.fromAddress ?? addressOf(this.from);
    const domain = address.includes('@') ? address.slice(address.lastIndexOf('@') + 1) : 'localhost';
    return {
      from: route.fromName ? { name: route.fromName, address } : route.fromAddress ? address : this.from,
      ...(route.replyTo ? { replyTo: route.replyTo } : {}),
      messageId: `<${randomUUID()}@${domain}>`,
      date: new Date(),
    };
  }

  close(): void {
    for (const t of this.transports.values()) t.close();
    this.transports.clear();
  }
}
