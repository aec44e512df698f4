import pThrottle from 'p-throttle';
import type { DomainEvent } from '@loyalty/contracts';
import { afterCommit, type Logger, type PoolClient } from '@loyalty/runtime';
import { MAIL_NAME_MAX, MAIL_NOTE_MAX, MAIL_REWARD_MAX, mailText } from '../domain/mail-text.ts';
import { membersByIds } from '../store/members.ts';
import { enqueueMail } from '../store/outgoing-mails.ts';
import { findTenant } from '../store/tenants.ts';
import type { MarketingLinks } from './marketing.ts';

/**
 * Member notifications driven by other services' domain events. Each template turns an event into
 * a mail (or nothing). The event consumer records the event id in the same transaction as the
 * mail's outgoing row, so a redelivered event queues no second mail.
 */
type Template = (data: Record<string, unknown>, name: string) => { subject: string; text: string } | null;

// Every value from an event or a member is flattened and bounded (mail-text.ts): names, notes and
// reward names are typed by members and staff, and reach the member's inbox.
const num = (v: unknown) => mailText(v ?? 0, 20);
const rewardOf = (d: Record<string, unknown>) => mailText(d.reward_name ?? 'your reward', MAIL_REWARD_MAX);
const staffNote = (d: Record<string, unknown>) =>
  d.staff_note ? `\nNote from staff: ${mailText(d.staff_note, MAIL_NOTE_MAX)}` : '';

/** A date of an event (`YYYY-MM-DD`, UTC): expiries are told by day. */
const day = (v: unknown) => mailText(typeof v === 'string' ? v.slice(0, 10) : '', 10);

export const templates: Record<string, Template> = {
  // Points earned: summarized per member in earn-mails.ts, not mailed per event.
  // Lots (ledger): once per lot, the card's expiry_warning_days before it expires.
  'ledger.points_expiring': (d, name) => ({
    subject: `${num(d.points)} points expire on ${day(d.expires_on)}`,
    text: `Hello ${name},\n\n${num(d.points)} of your points expire on ${day(d.expires_on)}. Spend them before then to keep their value.\n`,
  }),
  'ledger.cashback_expiring': (d, name) => ({
    subject: `${num(d.amount)} ${mailText(d.currency ?? '', 3)} of cashback expires on ${day(d.expires_on)}`,
    text: `Hello ${name},\n\n${num(d.amount)} ${mailText(d.currency ?? '', 3)} of your cashback expires on ${day(d.expires_on)}. Spend it before then to keep it.\n`,
  }),
  // Tiers (ledger): warning_days before a review that would move the member down.
  'ledger.tier_downgrade_warning': (d, name) => {
    const needed =
      d.points_needed_to_retain !== undefined
        ? `${num(d.points_needed_to_retain)} more points`
        : `${num(d.amount_needed_to_retain)} more in purchases`;
    const from = mailText(d.from ?? 'current', MAIL_REWARD_MAX);
    return {
      subject: `Keep your ${from} tier: ${needed} by ${day(d.valid_until)}`,
      text: `Hello ${name},\n\nYour ${from} tier is reviewed on ${day(d.valid_until)}. Earn ${needed} by then to keep it; otherwise you move to ${mailText(d.to ?? 'a lower tier', MAIL_REWARD_MAX)}.\n`,
    };
  },
  'claims.claim_approved': (d, name) => ({
    subject: 'Your reward claim was approved',
    text: `Hello ${name},\n\nYour claim for "${rewardOf(d)}" was approved; ${num(d.points_deducted)} points were deducted.${staffNote(d)}\n`,
  }),
  'claims.claim_rejected': (d, name) => ({
    subject: 'Your reward claim was not approved',
    text: `Hello ${name},\n\nYour claim for "${rewardOf(d)}" was not approved, and your points were kept.${staffNote(d)}\n`,
  }),
};

/**
 * The notifications that are marketing (mail/marketing.ts): expiry warnings invite the member to
 * spend. A claim's decision is transactional.
 */
export const marketingNotifications: ReadonlySet<string> = new Set([
  'ledger.points_expiring',
  'ledger.cashback_expiring',
]);

/** Where a consumer's mail goes: recorded in its transaction, sent after the commit (outgoing-mails.ts). */
export interface MailQueue {
  now: () => Date;
  /** Called once the consumer's transaction committed a mail: the sender looks at once. */
  wake: () => void;
  /** Marketing notifications: the member's consent and the unsubscribe link of the body. */
  marketing: MarketingLinks;
}

/**
 * The handler of the member-notification consumers: the event's mail is written to the outgoing
 * mails in the consumer's transaction (with its processed record); the outgoing-mail sender sends
 * it after the commit. No SMTP conversation while the transaction is open.
 */
export function notificationHandler(queue: MailQueue, consumer: string, log: Logger) {
  return async (event: DomainEvent, db: PoolClient): Promise<void> => {
    const template = templates[event.type];
    const memberId = Number(event.data.member_id);
    if (!template || !Number.isInteger(memberId)) return;
    const [member] = await membersByIds(db, event.tenant_id, [memberId]);
    if (!member?.email) return;
    const mail = template(event.data, mailText(member.name, MAIL_NAME_MAX));
    if (!mail) return;
    const marketing = marketingNotifications.has(event.type);
    if (marketing && !(await queue.marketing.mayMail(db, event.tenant_id, memberId))) return;
    const tenant = await findTenant(db, event.tenant_id);
    const queued = await enqueueMail(db, {
      tenantId: event.tenant_id,
      source: `${consumer}:${event.id}`,
      kind: 'notification',
      to: member.email,
      subject: mail.subject,
      body: marketing ? mail.text + queue.marketing.footer(event.tenant_id, memberId) : mail.text,
      sandbox: tenant?.sandbox ?? false,
      now: queue.now(),
      ...(marketing ? { marketingTo: memberId } : {}),
    });
    if (queued) afterCommit(db, queue.wake);
    log.debug({ event: event.id, type: event.type, member: memberId }, 'notification queued');
  };
}

/**
 * The pace of notification mails of one replica, shared by its senders (outgoing mails, the
 * points-earned digests), which wait for it outside any transaction (so a mail waiting for its
 * turn holds no database connection). Evenly spaced, not in bursts: mail providers limit senders (Amazon SES starts
 * accounts at 14 a second), and a burst of earns must not turn into a burst of mail competing with
 * the money path for CPU. 0: no pace.
 */
export function notificationPace(perSecond: number): (() => Promise<void>) | undefined {
  if (perSecond <= 0) return undefined;
  const turn = pThrottle({ limit: 1, interval: 1_000 / perSecond })(() => undefined);
  return async () => {
    await turn();
  };
}
