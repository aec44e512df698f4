import type { DomainEvent } from '@loyalty/contracts';
import { PeriodicTask, withTransaction, type Clock, type Logger, type Pool } from '@loyalty/runtime';
import { MAIL_NAME_MAX, mailText } from '../domain/mail-text.ts';
import { mailError, type Mailer } from './mailer.ts';
import { memberLocales, membersByIds } from '../store/members.ts';
import { renderFor, tenantMail, type TenantMail } from './messages.ts';
import { isLocale, type Formatter, type Locale, type RenderedMail, type Vars } from './render/index.ts';

/**
 * Points-earned mail, summarized. A shop can post many earns for one member within a minute (a
 * basket split into lines, a busy till, a benchmark): one mail each would flood the member and the
 * mail queue. The rule: a member's first earn opens a digest due `windowSeconds` later; every earn
 * until it is mailed joins it; the member then gets one mail (exactly today's text when it holds a
 * single earn, else "You earned 120 points in 4 purchases" with the balance after the latest).
 * So a member gets at most one points-earned mail per window, and the mail queue never holds
 * more than one per member who earned.
 */
export interface EarnMailOptions {
  pool: Pool;
  clock: Clock;
  mailer: Mailer;
  log: Logger;
  /** How long a digest collects earns after the first (0: mailed on the sender's next turn). */
  windowSeconds: number;
  /** How often the sender looks for due digests. */
  intervalMs: number;
  /** Mails sent at once. */
  concurrency: number;
  /** The replica's notification pace, shared with the other member notifications. */
  admit?: () => Promise<void>;
}

export interface Digest {
  tenant_id: string;
  member_id: string;
  card_id: string | null;
  earns: number;
  points: string;
  pending_points: string;
  available_at: Date | null;
  new_balance: string | null;
  /** The card's time zone (null: UTC, or cards of different zones). */
  time_zone?: string | null;
}

/** How long a sender owns the digests it took before another replica may take them again. */
const LEASE = "interval '5 minutes'";
/** After a failed mail, when to try again. */
const RETRY_SECONDS = 60;

interface Earn {
  tenantId: number;
  memberId: number;
  cardId: number | null;
  earns: number;
  points: number;
  pendingPoints: number;
  availableAt: string | null;
  newBalance: number | null;
  balanceAt: string;
  timeZone: string | null;
}

/** An event's earn, or null when it is not one a member can be told about. */
function earnOf(event: DomainEvent): Earn | null {
  const d = event.data;
  const memberId = Number(d.member_id);
  const points = Number(d.points);
  if (!Number.isSafeInteger(memberId) || !Number.isSafeInteger(points) || points <= 0) return null;
  const pending = d.pending === true;
  const available = d.available_at;
  const availableAt =
    pending && typeof available === 'string' && !Number.isNaN(Date.parse(available)) ? available : null;
  return {
    tenantId: event.tenant_id,
    memberId,
    cardId: Number.isSafeInteger(Number(d.card_id)) ? Number(d.card_id) : null,
    earns: 1,
    points,
    pendingPoints: pending ? points : 0,
    availableAt,
    newBalance: Number.isSafeInteger(Number(d.new_balance)) ? Number(d.new_balance) : null,
    balanceAt: Number.isNaN(Date.parse(event.occurred_at)) ? new Date(0).toISOString() : event.occurred_at,
    timeZone: typeof d.time_zone === 'string' && d.time_zone.length <= 64 ? d.time_zone : null,
  };
}

/** Earns of one member within a batch, summed as the digest sums them. */
function merge(a: Earn, b: Earn): Earn {
  const later = Date.parse(b.balanceAt) >= Date.parse(a.balanceAt) ? b : a;
  return {
    ...a,
    cardId: a.cardId === b.cardId ? a.cardId : null,
    timeZone: a.timeZone === b.timeZone ? a.timeZone : null,
    earns: a.earns + b.earns,
    points: a.points + b.points,
    pendingPoints: a.pendingPoints + b.pendingPoints,
    availableAt:
      a.availableAt && b.availableAt
        ? Date.parse(a.availableAt) >= Date.parse(b.availableAt)
          ? a.availableAt
          : b.availableAt
        : (a.availableAt ?? b.availableAt),
    newBalance: later.newBalance,
    balanceAt: later.balanceAt,
  };
}

/**
 * The batch handler of `ledger.points_earned`: each new earn joins its member's digest (no mail
 * here). One transaction per batch: the events' ids are recorded (a redelivered one is skipped),
 * then the batch's earns, summed per member, are upserted in one statement, in key order so two
 * batches never wait on each other's rows in opposite orders.
 */
export function earnDigestHandler(o: { pool: Pool; clock: Clock; windowSeconds: number; consumer: string }) {
  return async (events: DomainEvent[]): Promise<void> => {
    if (events.length === 0) return;
    await withTransaction(o.pool, async (db) => {
      const { rows: fresh } = await db.query<{ event_id: string }>(
        `INSERT INTO identity.processed_events (consumer, event_id) SELECT $1, unnest($2::text[])
         ON CONFLICT DO NOTHING RETURNING event_id`,
        [o.consumer, events.map((e) => e.id)],
      );
      const isFresh = new Set(fresh.map((r) => r.event_id));
      const byMember = new Map<string, Earn>();
      for (const event of events) {
        if (!isFresh.has(event.id)) continue; // handled before: a redelivery joins nothing
        isFresh.delete(event.id); // the same event twice in one batch counts once
        const earn = earnOf(event);
        if (!earn) continue;
        const key = `${earn.tenantId}:${earn.memberId}`;
        const seen = byMember.get(key);
        byMember.set(key, seen ? merge(seen, earn) : earn);
      }
      const earns = [...byMember.values()].sort((a, b) => a.tenantId - b.tenantId || a.memberId - b.memberId);
      if (earns.length === 0) return;
      const col = <K extends keyof Earn>(k: K) => earns.map((e) => e[k]);
      await db.query(
        `INSERT INTO identity.earn_mail_digests AS g
           (tenant_id, member_id, card_id, earns, points, pending_points, available_at, new_balance, balance_at, due_at,
            time_zone)
         SELECT t, m, c, e, p, pp, a, b, ba, $10::timestamptz + make_interval(secs => $11), z
           FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::int[], $5::bigint[], $6::bigint[],
                       $7::timestamptz[], $8::bigint[], $9::timestamptz[], $12::text[]) AS x(t, m, c, e, p, pp, a, b, ba, z)
          ORDER BY t, m
         ON CONFLICT (tenant_id, member_id) DO UPDATE SET
           card_id = CASE WHEN g.card_id = EXCLUDED.card_id THEN g.card_id END,
           time_zone = CASE WHEN g.time_zone = EXCLUDED.time_zone THEN g.time_zone END,
           earns = g.earns + EXCLUDED.earns,
           points = g.points + EXCLUDED.points,
           pending_points = g.pending_points + EXCLUDED.pending_points,
           available_at = GREATEST(g.available_at, EXCLUDED.available_at),
           new_balance = CASE WHEN EXCLUDED.balance_at >= g.balance_at THEN EXCLUDED.new_balance ELSE g.new_balance END,
           balance_at = GREATEST(g.balance_at, EXCLUDED.balance_at)`,
        [
          col('tenantId'),
          col('memberId'),
          col('cardId'),
          col('earns'),
          col('points'),
          col('pendingPoints'),
          col('availableAt'),
          col('newBalance'),
          col('balanceAt'),
          o.clock.now(),
          o.windowSeconds,
          col('timeZone'),
        ],
      );
    });
  };
}

/**
 * The variables of a digest's mail (kind `points_earned`): one earn told alone (the text of the
 * mail per earn before digests); several summed up. The balance is told when the earns were on
 * one card, and not beside a single earn's pending points (they are not in it yet).
 */
export function digestVars(g: Digest, name: string): (f: Formatter) => Vars {
  return (f) => {
    const n = (v: unknown) => mailText(f.number(v), 30);
    const pending = Number(g.pending_points);
    const availableOn = g.available_at ? mailText(f.date(g.available_at), 40) : '';
    const single = g.earns === 1;
    const showPending = pending > 0 && (single || availableOn !== '');
    const showBalance = g.card_id !== null && g.new_balance !== null && !(single && pending > 0);
    return {
      name,
      points: n(g.points),
      purchases: n(g.earns),
      several: !single,
      pending: showPending,
      pending_points: n(pending),
      available_on: availableOn,
      balance: showBalance ? n(g.new_balance) : '',
    };
  };
}

/** The mail of a digest for a tenant, in the member's locale (else the tenant's). */
export function digestMail(
  g: Digest,
  name: string,
  tenant: TenantMail,
  o: { locale?: Locale | null | undefined; timeZone?: string | undefined } = {},
): Promise<RenderedMail> {
  return renderFor(tenant, 'points_earned', digestVars(g, name), o);
}

/**
 * Mails due digests: safe in every replica (rows are leased with SKIP LOCKED), at least once. A
 * pass takes one batch; a full batch makes the next pass start at once.
 */
export class EarnMailSender {
  private readonly task: PeriodicTask<{ taken: number; mailed: number }>;

  constructor(private readonly o: EarnMailOptions) {
    this.task = new PeriodicTask({
      name: 'earn-mails',
      intervalMs: o.intervalMs,
      log: o.log,
      run: () => this.sendBatch(),
      more: ({ taken }) => taken >= this.batchSize,
    });
  }

  private get batchSize(): number {
    return this.o.concurrency * 4;
  }

  start(): void {
    this.task.start();
  }

  /** No digest is taken once stopping; mails on their way finish. */
  stop(): Promise<void> {
    return this.task.stop();
  }

  /** Send every digest due now (after the pass in progress); returns how many were mailed. */
  async sendDue(): Promise<number> {
    let mailed = 0;
    for (;;) {
      const pass = await this.task.runNow();
      mailed += pass.mailed;
      if (pass.taken < this.batchSize) return mailed;
    }
  }

  /** Lease one batch of due digests and mail them. */
  private async sendBatch(): Promise<{ taken: number; mailed: number }> {
    const now = this.o.clock.now();
    const { rows } = await this.o.pool.query<Digest>(
      `UPDATE identity.earn_mail_digests g SET lease_until = $1::timestamptz + ${LEASE}
        WHERE (tenant_id, member_id) IN (
          SELECT tenant_id, member_id FROM identity.earn_mail_digests
           WHERE due_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
           ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED)
        RETURNING tenant_id, member_id, card_id, earns, points, pending_points, available_at, new_balance, time_zone`,
      [now, this.batchSize],
    );
    const results = await Promise.all(rows.map((g) => this.send(g)));
    return { taken: rows.length, mailed: results.filter(Boolean).length };
  }

  private async send(g: Digest): Promise<boolean> {
    const tenantId = Number(g.tenant_id);
    const log = this.o.log.child({ tenant: tenantId, member: Number(g.member_id) });
    const memberId = Number(g.member_id);
    const [member] = await membersByIds(this.o.pool, tenantId, [memberId]);
    let sent = false;
    // A points-earned digest is the receipt of the member's own purchases (the notification an earn
    // answer names in `notification_sent`): transactional, sent whatever their marketing consents.
    const tenant = member?.email ? await tenantMail(this.o.pool, tenantId) : undefined;
    if (member?.email && tenant) {
      await this.o.admit?.();
      try {
        const locale = (await memberLocales(this.o.pool, tenantId, [memberId])).get(memberId);
        const mail = await digestMail(g, mailText(member.name, MAIL_NAME_MAX), tenant, {
          locale: isLocale(locale) ? locale : undefined,
          timeZone: g.time_zone ?? undefined,
        });
        await this.o.mailer.sendAs(
          tenant,
          { to: member.email, subject: mail.subject, text: mail.text, html: mail.html },
          log,
          'notification',
        );
        sent = true;
        log.info({ earns: g.earns, points: Number(g.points) }, 'points earned mail sent');
      } catch (err) {
        log.warn({ err: mailError(err) }, 'points earned mail failed; retried later');
        await this.o.pool.query(
          `UPDATE identity.earn_mail_digests SET lease_until = $3::timestamptz + make_interval(secs => ${RETRY_SECONDS})
            WHERE tenant_id = $1 AND member_id = $2`,
          [g.tenant_id, g.member_id, this.o.clock.now()],
        );
        return false;
      }
    }
    // What was mailed (or cannot be: no member, no address) leaves the digest; earns that joined
    // it while the mail was on its way stay for the next one, a window from now.
    await withTransaction(this.o.pool, async (db) => {
      await db.query(
        `UPDATE identity.earn_mail_digests
            SET earns = earns - $3, points = points - $4, pending_points = pending_points - $5,
                lease_until = NULL, due_at = $6::timestamptz + make_interval(secs => $7)
          WHERE tenant_id = $1 AND member_id = $2`,
        [g.tenant_id, g.member_id, g.earns, g.points, g.pending_points, this.o.clock.now(), this.o.windowSeconds],
      );
      await db.query(`DELETE FROM identity.earn_mail_digests WHERE tenant_id = $1 AND member_id = $2 AND earns <= 0`, [
        g.tenant_id,
        g.member_id,
      ]);
    });
    return sent;
  }
}
