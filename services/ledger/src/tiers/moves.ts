import DataLoader from 'dataloader';
import type { Outbox, Queryable } from '@loyalty/runtime';
import type { RuledCard } from '../card-cache.ts';
import { periodKey } from '../domain/rules/index.ts';
import { lowestRank, qualifyingOfBonus, stepOfRank, type TierLadder } from '../domain/tiers.ts';
import type { PostedTier, TierMove } from '../store/accounts.ts';
import { memberRank, memberRanks } from '../store/tiers.ts';

/**
 * The tier move a credit of `delta` carries on a card with tiers (undefined: the card has none);
 * `assumedRank`: the member's rank the earn's rules were evaluated with, which the posting checks.
 */
export function tierMove(
  outbox: Outbox,
  card: RuledCard,
  at: Date,
  delta: number,
  assumedRank?: number | null,
): TierMove | undefined {
  const ladder = card.tiers;
  if (ladder === null) return undefined;
  return {
    delta,
    assumedRank,
    day: periodKey('day', at, card.time_zone),
    window: ladder.window,
    windowDays: ladder.windowDays,
    validityDays: ladder.validityDays,
    warningDays: ladder.warningDays,
    timeZone: card.time_zone,
    lowest: lowestRank(ladder),
    upgrade: outbox.naming('tier_upgraded'),
  };
}

/** The `tier` of an earn's answer: the member's tier after the posting. */
export function earnTierView(ladder: TierLadder, t: PostedTier) {
  const step = stepOfRank(ladder, t.rank);
  return {
    name: step.name,
    rank: step.rank,
    valid_until: t.validUntil ? t.validUntil.toISOString() : null,
    upgraded: t.rank > t.prevRank,
  };
}

/** The `tier` of a balance answer. */
export function tierBadge(ladder: TierLadder, row: { rank: number; valid_until: Date | null } | undefined) {
  const step = stepOfRank(ladder, row?.rank);
  return {
    name: step.name,
    rank: step.rank,
    valid_until: row?.valid_until ? row.valid_until.toISOString() : null,
  };
}

/** Members whose rank a replica remembers (the oldest forgotten first): a few MB at most. */
const KNOWN_RANKS = 50_000;

/**
 * Members' ranks for the earns outside a transaction whose rules have a tier condition. Such an
 * earn posts with the rank its rules were evaluated with, and the posting statement refuses it
 * when the member's committed rank is another (store/accounts.ts); the earn is then evaluated
 * again with the rank found (`StaleTierRank`). So a rank here needs only to be usually right: the
 * one the member's last posting on this replica answered, else read, the reads of concurrent
 * earns in one statement: while `statements` reads are in flight the next ones queue up, and
 * the next statement takes them all (as the posting batcher does for postings).
 */
export class MemberRanks {
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly loader: DataLoader<{ cardId: number; memberId: number }, number | null>;
  /** The last rank seen of a member (`card:member`; null: no row, the lowest tier). */
  private readonly known = new Map<string, number | null>();

  constructor(db: Queryable, opts: { statements: number; maxBatch: number } = { statements: 2, maxBatch: 500 }) {
    this.loader = new DataLoader(
      async (keys) => {
        try {
          const ranks = await memberRanks(db, keys);
          return keys.map((k) => ranks.get(`${k.cardId}:${k.memberId}`) ?? null);
        } finally {
          const next = this.waiting.shift();
          if (next) next();
          else this.inFlight--;
        }
      },
      {
        cache: false,
        maxBatchSize: opts.maxBatch,
        batchScheduleFn: (dispatch) => {
          if (this.inFlight < opts.statements) {
            this.inFlight++;
            setImmediate(dispatch); // reads of this event-loop turn join the statement
          } else this.waiting.push(dispatch);
        },
      },
    );
  }

  /** The member's rank as last seen here, else as stored (null: no row, the lowest tier). */
  async rank(cardId: number, memberId: number): Promise<number | null> {
    const seen = this.known.get(`${cardId}:${memberId}`);
    if (seen !== undefined) return seen;
    const rank = await this.loader.load({ cardId, memberId });
    this.learn(cardId, memberId, rank);
    return rank;
  }

  /** Remember the rank a posting answered (or was refused with). */
  learn(cardId: number, memberId: number, rank: number | null): void {
    const key = `${cardId}:${memberId}`;
    if (!this.known.has(key) && this.known.size >= KNOWN_RANKS) {
      const oldest = this.known.keys().next();
      if (!oldest.done) this.known.delete(oldest.value);
    }
    this.known.set(key, rank);
  }
}

/**
 * An earn's posting found the member's rank to be another than the one its rules were evaluated
 * with (`TierMove.assumedRank`): nothing was written; evaluate again with `rank`.
 */
export class StaleTierRank extends Error {
  constructor(readonly rank: number | null) {
    super("the member's tier changed before the posting");
  }
}

/** Whether an earn's rules read the member's tier (a rule with a tier condition, on a card with tiers). */
export function rulesReadTier(card: RuledCard, rules: readonly { when: { tiers: string[] | null } }[]): boolean {
  return card.tiers !== null && rules.some((r) => r.when.tiers !== null);
}

/**
 * The member's tier name for earning rules with a tier condition (one read, only on a card with
 * tiers whose rules ask for it); null: the card has no tiers or no rule asks. `db` is the caller's
 * transaction or the pool (earns outside a transaction use MemberRanks and post with the rank
 * they assumed).
 */
export async function tierForRules(
  db: Queryable,
  card: RuledCard,
  rules: readonly { when: { tiers: string[] | null } }[],
  memberId: number,
): Promise<string | null> {
  if (card.tiers === null || !rulesReadTier(card, rules)) return null;
  return stepOfRank(card.tiers, await memberRank(db, card.id, memberId)).name;
}

/** The tier move of a bonus credit (referral, adjustment, member event): only when bonuses qualify. */
export function bonusTierMove(outbox: Outbox, card: RuledCard, at: Date, amount: number): TierMove | undefined {
  if (card.tiers === null) return undefined;
  const delta = qualifyingOfBonus(card.tiers, amount);
  return delta > 0 ? tierMove(outbox, card, at, delta) : undefined;
}
