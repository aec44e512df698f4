import pThrottle from 'p-throttle';
import type { DomainEvent } from '@loyalty/contracts';
import { afterCommit, type Logger, type PoolClient } from '@loyalty/runtime';
import { MAIL_NAME_MAX, MAIL_NOTE_MAX, MAIL_REWARD_MAX, mailText } from '../domain/mail-text.ts';
import { memberLocales, membersByIds } from '../store/members.ts';
import { enqueueMail } from '../store/outgoing-mails.ts';
import type { MarketingLinks } from './marketing.ts';
import { renderFor, tenantMail } from './messages.ts';
import {
  catalog,
  isLocale,
  phrases,
  type Formatter,
  type Locale,
  type MailKindName,
  type Vars,
} from './render/index.ts';

/**
 * Member notifications driven by other services' domain events. Each event type names the message
 * kind it is told with (mail/render/catalog.ts) and the kind's variables, formatted for the
 * member's locale and the card's time zone (the event's `time_zone`, UTC without one). The event
 * consumer records the event id in the same transaction as the mail's outgoing row, so a
 * redelivered event queues no second mail.
 */
interface Notification {
  kind: MailKindName;
  vars: (d: Record<string, unknown>, f: Formatter, locale: Locale) => Vars;
}

// Every value from an event or a member is flattened and bounded (mail-text.ts): names, notes and
// reward names are typed by members and staff, and reach the member's inbox (escaped again in the
// HTML part, render/layout.ts).
const num = (f: Formatter, v: unknown) => mailText(f.number(v ?? 0), 30);
const rewardOf = (d: Record<string, unknown>, l: Locale) =>
  mailText(d.reward_name ?? phrases[l].yourReward, MAIL_REWARD_MAX);
const staffNote = (d: Record<string, unknown>) => (d.staff_note ? mailText(d.staff_note, MAIL_NOTE_MAX) : '');
/** A day of an event (`YYYY-MM-DD`): expiries are told by day. */
const day = (f: Formatter, v: unknown) => mailText(f.date(typeof v === 'string' ? v.slice(0, 10) : ''), 40);
/** An instant of an event told as its day in the card's time zone (the event's `time_zone`). */
const dayOf = (f: Formatter, v: unknown) => mailText(f.date(typeof v === 'string' ? v : ''), 40);
/**
 * An expiry's day: the first expiry's instant as a day of the card's time zone when the event names
 * the zone; else the event's day (UTC).
 */
const expiryDay = (f: Formatter, d: Record<string, unknown>) =>
  typeof d.time_zone === 'string' && typeof d.expires_at === 'string' ? dayOf(f, d.expires_at) : day(f, d.expires_on);

export const notifications: Record<string, Notification> = {
  // Points earned: summarized per member in earn-mails.ts, not mailed per event.
  // Lots (ledger): once per lot, the card's expiry_warning_days before it expires.
  'ledger.points_expiring': {
    kind: 'points_expiring',
    vars: (d, f) => ({ points: num(f, d.points), expires_on: expiryDay(f, d) }),
  },
  'ledger.cashback_expiring': {
    kind: 'cashback_expiring',
    vars: (d, f) => ({ amount: mailText(f.money(d.amount, d.currency), 40), expires_on: expiryDay(f, d) }),
  },
  // Tiers (ledger): warning_days before a review that would move the member down.
  'ledger.tier_downgrade_warning': {
    kind: 'tier_downgrade_warning',
    vars: (d, f, l) => ({
      tier: mailText(d.from ?? '', MAIL_REWARD_MAX),
      next_tier: mailText(d.to ?? '', MAIL_REWARD_MAX),
      needed:
        d.points_needed_to_retain !== undefined
          ? phrases[l].morePoints(num(f, d.points_needed_to_retain))
          : phrases[l].moreSpent(num(f, d.amount_needed_to_retain)),
      review_on: typeof d.time_zone === 'string' ? dayOf(f, d.valid_until) : day(f, d.valid_until),
    }),
  },
  'claims.claim_approved': {
    kind: 'claim_approved',
    vars: (d, f, l) => ({ reward: rewardOf(d, l), points: num(f, d.points_deducted), staff_note: staffNote(d) }),
  },
  'claims.claim_rejected': {
    kind: 'claim_rejected',
    vars: (d, _f, l) => ({ reward: rewardOf(d, l), staff_note: staffNote(d) }),
  },
};

/**
 * The notifications that are marketing (mail/marketing.ts): expiry warnings invite the member to
 * spend. A claim's decision is transactional.
 */
export const marketingNotifications: ReadonlySet<string> = new Set(
  Object.entries(notifications)
    .filter(([, n]) => catalog[n.kind].category === 'marketing')
    .map(([type]) => type),
);

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
    const notification = notifications[event.type];
    const memberId = Number(event.data.member_id);
    if (!notification || !Number.isInteger(memberId)) return;
    const [member] = await membersByIds(db, event.tenant_id, [memberId]);
    if (!member?.email) return;
    const marketing = marketingNotifications.has(event.type);
    if (marketing && !(await queue.marketing.mayMail(db, event.tenant_id, memberId))) return;
    const tenant = await tenantMail(db, event.tenant_id);
    if (!tenant) return;
    const name = mailText(member.name, MAIL_NAME_MAX);
    const timeZone = typeof event.data.time_zone === 'string' ? event.data.time_zone : undefined;
    const locale = (await memberLocales(db, event.tenant_id, [memberId])).get(memberId);
    const mail = await renderFor(
      tenant,
      notification.kind,
      (f, l) => ({ name, ...notification.vars(event.data, f, l) }),
      {
        locale: isLocale(locale) ? locale : undefined,
        timeZone,
        unsubscribeUrl: marketing ? queue.marketing.url(event.tenant_id, memberId) : undefined,
      },
    );
    const queued = await enqueueMail(db, {
      tenantId: event.tenant_id,
      source: `${consumer}:${event.id}`,
      kind: 'notification',
      to: member.email,
      subject: mail.subject,
      body: mail.text,
      html: mail.html,
      sandbox: tenant.sandbox,
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
