import DataLoader from 'dataloader';
import type { Outbox, Queryable } from '@loyalty/runtime';
import type { RuledCard } from '../card-cache.ts';
import { periodKey } from '../domain/rules/index.ts';
import { lowestRank, qualifyingOfBonus, stepOfRank, type TierLadder } from '../domain/tiers.ts';
import type { PostedTier, TierMove } from '../store/accounts.ts';
import { memberRank, memberRanks } from '../store/tiers.ts';

/** The tier move a credit of `delta` carries on a card with tiers (undefined: the card has none). */
export function tierMove(
  outbox: Outbox,
  card: RuledCard,
  memberId: number,
  at: Date,
  delta: number,
): TierMove | undefined {
  const ladder = card.tiers;
  if (ladder === null) return undefined;
  return {
    delta,
    day: periodKey('day', at, card.time_zone),
    window: ladder.window,
    windowDays: ladder.windowDays,
    validityDays: ladder.validityDays,
    warningDays: ladder.warningDays,
    timeZone: card.time_zone,
    lowest: lowestRank(ladder),
    event: outbox.event({
      type: 'tier_upgraded',
      tenantId: card.tenant_id,
      occurredAt: at,
      data: { member_id: memberId, card_id: card.id, reason: 'qualified' },
    }),
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

/**
 * Members' ranks read outside any transaction, the reads of concurrent earns in one statement: while
 * `statements` reads are in flight the next ones queue up, and the next statement takes them all
 * (as the posting batcher does for postings). Each earn still reads its member's committed rank
 * before its own posting, as a read of its own would.
 */
export class MemberRanks {
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly loader: DataLoader<{ cardId: number; memberId: number }, number | undefined>;

  constructor(db: Queryable, opts: { statements: number; maxBatch: number } = { statements: 2, maxBatch: 500 }) {
    this.loader = new DataLoader(
      async (keys) => {
        try {
          const ranks = await memberRanks(db, keys);
          return keys.map((k) => ranks.get(`${k.cardId}:${k.memberId}`));
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

  rank(cardId: number, memberId: number): Promise<number | undefined> {
    return this.loader.load({ cardId, memberId });
  }
}

/**
 * The member's tier name for earning rules with a tier condition (one read, only on a card with
 * tiers whose rules ask for it); null: the card has no tiers or no rule asks. `db` is the caller's
 * transaction, or the batched reads outside one.
 */
export async function tierForRules(
  db: Queryable | MemberRanks,
  card: RuledCard,
  rules: readonly { when: { tiers: string[] | null } }[],
  memberId: number,
): Promise<string | null> {
  if (card.tiers === null || !rules.some((r) => r.when.tiers !== null)) return null;
  const rank = db instanceof MemberRanks ? await db.rank(card.id, memberId) : await memberRank(db, card.id, memberId);
  return stepOfRank(card.tiers, rank).name;
}

/** The tier move of a bonus credit (referral, adjustment, member event): only when bonuses qualify. */
export function bonusTierMove(
  outbox: Outbox,
  card: RuledCard,
  memberId: number,
  at: Date,
  amount: number,
): TierMove | undefined {
  if (card.tiers === null) return undefined;
  const delta = qualifyingOfBonus(card.tiers, amount);
  return delta > 0 ? tierMove(outbox, card, memberId, at, delta) : undefined;
}
