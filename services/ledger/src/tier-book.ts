import { AppError, readIsoTime, type AdminMeta, type Meta, type ServiceMeta, type StaffMeta } from '@loyalty/contracts';
import {
  auditActor,
  recordAudit,
  withTransaction,
  type Clock,
  type Outbox,
  type Pool,
  type PoolClient,
  type Queryable,
} from '@loyalty/runtime';
import type { MemberDirectory } from './clients.ts';
import { fromCents } from './domain/money.ts';
import { periodKey } from './domain/rules/index.ts';
import {
  checkedLadder,
  countsMoney,
  nextStep,
  stepOfRank,
  type TierLadder,
  type TierSettingsDraft,
  type TierStep,
} from './domain/tiers.ts';
import { findCard, type Card } from './store/cards.ts';
import {
  findLadder,
  findMemberTier,
  joinedOn,
  membersOfCard,
  membersPerRank,
  qualifyingBetween,
  saveLadder,
  setManualTier,
  windowOf,
} from './store/tiers.ts';

type Who = Meta | AdminMeta | StaffMeta;

/** How a recompute of the card's members is queued in a transaction (tiers/recompute.ts) and its runner woken after. */
export interface Recompute {
  /** Queue the job with `db`; its public id. */
  start: (db: PoolClient, card: Card, version: number) => Promise<string>;
  wake: () => void;
}

/** The qualifying unit of a ladder as the API writes it: points, or currency units for cents. */
function amountView(ladder: Pick<TierLadder, 'metric'>, card: Card) {
  return countsMoney(ladder.metric, card.reward_system) ? (v: number) => fromCents(v) : (v: number) => v;
}

/** Whether two ladders qualify members the same way (a change of names or descriptions needs no recompute). */
function sameQualification(a: Omit<TierLadder, 'version' | 'updatedAt'> | undefined, b: typeof a): boolean {
  if (a === undefined || b === undefined) return a === b;
  const steps = (l: NonNullable<typeof a>) => l.steps.map((s) => `${s.rank}:${s.entry}:${s.retain}`).join(',');
  return (
    a.metric === b.metric &&
    a.countBonuses === b.countBonuses &&
    a.window === b.window &&
    a.windowDays === b.windowDays &&
    a.validityDays === b.validityDays &&
    a.warningDays === b.warningDays &&
    steps(a) === steps(b)
  );
}

/** The settings as GET answers them. */
function settingsOf(card: Card, ladder: TierLadder | undefined, counts: Map<number, number>, members: number) {
  const l = ladder ?? {
    metric: 'points_earned' as const,
    countBonuses: true,
    window: 'rolling' as const,
    windowDays: 365,
    validityDays: null,
    warningDays: 30,
    version: 0,
    updatedAt: null,
    steps: [],
  };
  const view = amountView(l, card);
  const lowest = l.steps[0]?.rank;
  // Members with a row of a rank no longer on the ladder count in the tier they would be shown in.
  const perStep = new Map<number, number>();
  for (const [rank, n] of counts) {
    if (l.steps.length === 0) break;
    const step = stepOfRank(l, rank);
    perStep.set(step.rank, (perStep.get(step.rank) ?? 0) + n);
  }
  const above = [...perStep.entries()].filter(([r]) => r !== lowest).reduce((a, [, n]) => a + n, 0);
  return {
    card_id: card.id,
    time_zone: card.time_zone,
    enabled: l.steps.length > 0,
    tiers: l.steps.map((s) => ({
      name: s.name,
      rank: s.rank,
      entry_threshold: view(s.entry),
      retain_threshold: view(s.retain),
      description: s.description,
      members: s.rank === lowest ? Math.max(0, members - above) : (perStep.get(s.rank) ?? 0),
    })),
    metric: l.metric,
    count_bonuses: l.countBonuses,
    window: l.window,
    window_days: l.windowDays,
    validity_days: l.validityDays,
    warning_days: l.warningDays,
    version: l.version,
    updated_at: l.updatedAt ? l.updatedAt.toISOString() : null,
  };
}

/**
 * The tiers of cards: the ladder and its settings (read, replaced as a whole, audited), each
 * member's tier with its progress, and tiers set by hand. A ladder change is a card change (every
 * replica forgets the card: earns read the ladder from the card cache) and, when it changes how
 * members qualify, starts a recompute of every member of the card.
 */
export class TierBook {
  constructor(
    private readonly deps: { pool: Pool; outbox: Outbox; clock: Clock; members: MemberDirectory },
    private readonly changed: (cardId: number) => void,
    private readonly recompute?: Recompute,
  ) {}

  async settings(tenantId: number, cardId: number) {
    const card = await this.cardOrFail(tenantId, cardId);
    const ladder = await findLadder(this.deps.pool, card.id);
    const counts = await membersPerRank(this.deps.pool, card.id);
    return settingsOf(card, ladder, counts, await membersOfCard(this.deps.pool, card.id));
  }

  async put(tenantId: number, cardId: number, d: TierSettingsDraft, who: Who) {
    const card = await this.cardOrFail(tenantId, cardId);
    const checked = checkedLadder(d, card.reward_system);
    if ('problems' in checked) {
      throw new AppError(
        'invalid_tiers',
        `The tier settings are not valid: ${checked.problems.map((p) => `${p.field} ${p.message}`).join('; ')}.`,
        { fields: checked.problems },
      );
    }
    const next = checked.ladder;
    const jobId = await withTransaction(this.deps.pool, async (db) => {
      const before = await findLadder(db, card.id, true);
      const at = this.deps.clock.now();
      await saveLadder(db, { tenantId, cardId: card.id }, next, at);
      const after = await findLadder(db, card.id);
      const requalify = next.steps.length > 0 && !sameQualification(before, next);
      const job = requalify && this.recompute && after ? await this.recompute.start(db, card, after.version) : null;
      await recordAudit(this.deps.outbox, db, tenantId, {
        actor: auditActor(who),
        action: 'tiers.updated',
        target: { card_id: card.id },
        details: {
          before: before ? ladderDetails(before) : null,
          after: ladderDetails(next),
          version: after?.version ?? 1,
          ...(job ? { recompute_job_id: job } : {}),
        },
        request_id: who.request_id,
      });
      return job;
    });
    this.changed(card.id);
    if (jobId) this.recompute?.wake();
    return { ...(await this.settings(tenantId, cardId)), recompute_job_id: jobId };
  }

  /**
   * The member's tier and progress (`tiers_not_configured` on a card without tiers). The member is
   * checked with the member directory first, as a balance read does: an erased or merged-away
   * member (a tombstone) answers member_not_found even though its account and tier rows stay.
   */
  async member(meta: ServiceMeta, cardId: number, memberId: number) {
    const card = await this.cardOrFail(meta.tenant_id, cardId);
    const ladder = await this.ladderOrFail(card);
    await this.deps.members.mustExist(meta, memberId);
    const row = await findMemberTier(this.deps.pool, card.id, memberId);
    const today = periodKey('day', this.deps.clock.now(), card.time_zone);
    const joined = row?.joined_on ?? (await joinedOn(this.deps.pool, card.id, memberId, card.time_zone)) ?? today;
    return memberTierView(this.deps.pool, card, ladder, memberId, row, today, joined);
  }

  /**
   * Set a member's tier by hand until `valid_until` (then reviewed as any other), with a reason:
   * audited, and announced as an upgrade or downgrade (reason `manual`) when the rank changes.
   */
  async setManually(
    who: Who,
    tenantId: number,
    cardId: number,
    memberId: number,
    d: { tier: string; valid_until: string; reason: string },
  ) {
    const meta: ServiceMeta = { request_id: who.request_id, tenant_id: tenantId };
    const card = await this.cardOrFail(meta.tenant_id, cardId);
    const ladder = await this.ladderOrFail(card);
    const step = ladder.steps.find((s) => s.name.toLowerCase() === d.tier.toLowerCase());
    if (!step) throw new AppError('tier_not_found', `The card has no tier named ${JSON.stringify(d.tier)}.`);
    const now = this.deps.clock.now();
    const read = readIsoTime(d.valid_until);
    const until = 'at' in read ? read.at : undefined;
    if (!until || until.getTime() <= now.getTime()) {
      throw new AppError('invalid_tiers', 'valid_until must be a timestamp in the future.', {
        fields: [
          { field: 'valid_until', message: 'at' in read ? 'must be an ISO timestamp in the future' : read.problem },
        ],
      });
    }
    // A tombstone (erased or merged away) keeps its account rows: it gets no tier (nor the event).
    await this.deps.members.mustExist(meta, memberId);
    const today = periodKey('day', now, card.time_zone);
    const joined = (await joinedOn(this.deps.pool, card.id, memberId, card.time_zone)) ?? today;
    const window = await windowOf(this.deps.pool, ladder, today, joined);
    await withTransaction(this.deps.pool, async (db) => {
      const { prevRank } = await setManualTier(
        db,
        { tenantId: meta.tenant_id, cardId: card.id, memberId },
        {
          rank: step.rank,
          validUntil: until,
          warnAt: new Date(until.getTime() - ladder.warningDays * 86_400_000),
          reason: d.reason,
          joined: joined,
          countedFrom: window.start ?? '-infinity',
        },
        now,
      );
      await this.announceManual(db, who, card, ladder, { memberId, prevRank, step, until, reason: d.reason, at: now });
    });
    return this.member(meta, cardId, memberId);
  }

  /** A tier set by hand: announced as an upgrade or downgrade (reason `manual`) when the rank changed, and audited. */
  private async announceManual(
    db: PoolClient,
    who: Who,
    card: Card,
    ladder: TierLadder,
    m: { memberId: number; prevRank: number | null; step: TierStep; until: Date; reason: string; at: Date },
  ): Promise<void> {
    const { memberId, step, until, at: now } = m;
    const meta = { tenant_id: card.tenant_id, request_id: who.request_id };
    const d = { reason: m.reason };
    const prevRank = m.prevRank;
    const from = stepOfRank(ladder, prevRank ?? undefined);
    if (from.rank !== step.rank) {
      await this.deps.outbox.record(db, {
        type: step.rank > from.rank ? 'tier_upgraded' : 'tier_downgraded',
        tenantId: meta.tenant_id,
        occurredAt: now,
        data: {
          member_id: memberId,
          card_id: card.id,
          from: from.name,
          to: step.name,
          from_rank: from.rank,
          to_rank: step.rank,
          valid_until: until.toISOString(),
          reason: 'manual',
        },
      });
    }
    await recordAudit(this.deps.outbox, db, meta.tenant_id, {
      actor: auditActor(who),
      action: 'tier.set',
      target: { card_id: card.id, member_id: memberId },
      details: { from: from.name, to: step.name, valid_until: until.toISOString(), reason: d.reason },
      request_id: meta.request_id,
    });
  }

  private async cardOrFail(tenantId: number, cardId: number): Promise<Card> {
    const card = await findCard(this.deps.pool, tenantId, cardId);
    if (!card) throw new AppError('card_not_found');
    return card;
  }

  private async ladderOrFail(card: Card): Promise<TierLadder> {
    const ladder = await findLadder(this.deps.pool, card.id);
    if (!ladder || ladder.steps.length === 0) throw new AppError('tiers_not_configured');
    return ladder;
  }
}

/** A ladder in an audit entry (thresholds in the ladder's unit: points or cents). */
function ladderDetails(l: Omit<TierLadder, 'version' | 'updatedAt'>) {
  return {
    metric: l.metric,
    count_bonuses: l.countBonuses,
    window: l.window,
    window_days: l.windowDays,
    validity_days: l.validityDays,
    warning_days: l.warningDays,
    tiers: l.steps.map((s) => ({ name: s.name, rank: s.rank, entry: s.entry, retain: s.retain })),
  };
}

/** The member's tier, qualifying total in the current window and what the next tier and the review need. */
export async function memberTierView(
  db: Queryable,
  card: Card,
  ladder: TierLadder,
  memberId: number,
  row: Awaited<ReturnType<typeof findMemberTier>>,
  today: string,
  joined: string,
) {
  const view = amountView(ladder, card);
  const step = stepOfRank(ladder, row?.rank);
  const window = await windowOf(db, ladder, today, joined);
  const total = await qualifyingBetween(db, card.id, memberId, window.start, null);
  const next = nextStep(ladder, step.rank);
  let neededToRetain: number | null = null;
  if (row?.valid_until) {
    const judged = await judgedWindow(db, ladder, row.valid_until, card.time_zone, joined);
    const soFar = await qualifyingBetween(db, card.id, memberId, judged.start, judged.until);
    neededToRetain = view(Math.max(0, step.retain - Math.max(0, soFar)));
  }
  return {
    card_id: card.id,
    member_id: memberId,
    tier: { name: step.name, rank: step.rank, description: step.description },
    valid_until: row?.valid_until ? row.valid_until.toISOString() : null,
    manual: row?.manual_reason ? { reason: row.manual_reason } : null,
    metric: ladder.metric,
    qualifying_total: view(Math.max(0, total)),
    window_start: window.start,
    window_end: window.end,
    next_tier: next ? { name: next.name, rank: next.rank, entry_threshold: view(next.entry) } : null,
    needed_for_next: next ? view(Math.max(0, next.entry - Math.max(0, total))) : null,
    needed_to_retain: neededToRetain,
  };
}

/** The window a tier valid until `validUntil` is judged on: [its start, the local day of validUntil). */
export async function judgedWindow(
  db: Queryable,
  ladder: Pick<TierLadder, 'window' | 'windowDays'>,
  validUntil: Date,
  timeZone: string,
  joined: string,
): Promise<{ start: string | null; until: string }> {
  const { rows } = await db.query<{ start: string | null; until: string }>(
    `SELECT CASE WHEN s = '-infinity' THEN NULL ELSE to_char(s, 'YYYY-MM-DD') END AS start, to_char(u, 'YYYY-MM-DD') AS until
       FROM (SELECT ($3::timestamptz AT TIME ZONE $4)::date AS u) d
       CROSS JOIN LATERAL (SELECT ledger.tier_window_start($1, $2, d.u - 1, $5::date) AS s) w`,
    [ladder.window, ladder.windowDays, validUntil, timeZone, joined],
  );
  const r = rows[0];
  if (!r) throw new Error('no judged window');
  return r;
}
