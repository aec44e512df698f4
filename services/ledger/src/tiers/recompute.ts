import type { Clock, JobHandler, JobStep, Outbox, PoolClient, Queryable } from '@loyalty/runtime';
import type { Card } from '../store/cards.ts';
import { findLadder } from '../store/tiers.ts';
import { periodKey } from '../domain/rules/index.ts';

/** The kind of the job that recomputes every member of a card after a ladder or metric change. */
export const RECOMPUTE_JOB = 'tiers.recompute';

/** Members per step (one transaction each). */
export const RECOMPUTE_BATCH = 5_000;

interface RecomputeParams {
  card_id: number;
  version: number;
}

/** Where the last committed step ended: the last member id done. */
interface Checkpoint {
  after: number;
}

function paramsOf(p: unknown): RecomputeParams {
  if (typeof p === 'object' && p !== null && 'card_id' in p && 'version' in p) {
    const { card_id: cardId, version } = p;
    if (typeof cardId === 'number' && typeof version === 'number') return { card_id: cardId, version };
  }
  throw new Error('tiers.recompute: bad parameters');
}

// What each journal row qualifies with under the card's ladder (`l`), in the ladder's unit: an earn
// its purchase (amount_spent) or what it earned (points_earned; without bonuses: minus what rules
// beyond the base gave, journal_rules); a refund the opposite (its refund amount, or what it took
// back, at most the base formula on the refund when bonuses do not count); a referral, adjustment
// or event bonus its amount when bonuses count for points_earned. The same as an earn decides it
// (products/flow.ts), but for cashback cards' base on refunds, which ignores the card's minimum
// and cap.
const QUALIFYING = `CASE
  WHEN j.event IN ('staff_added_points', 'cashback_earned') THEN
    CASE WHEN l.metric = 'amount_spent' THEN COALESCE(j.purchase_cents, 0)
         WHEN l.count_bonuses THEN j.amount
         ELSE j.amount - COALESCE((SELECT sum((r ->> 'amount')::bigint) FROM ledger.journal_rules jr,
                                   jsonb_array_elements(jr.rules) r WHERE jr.journal_id = j.id), 0) END
  WHEN j.event IN ('points_refunded', 'cashback_refunded') THEN
    CASE WHEN l.metric = 'amount_spent' THEN -COALESCE(j.purchase_cents, 0)
         WHEN l.count_bonuses THEN j.amount
         ELSE -LEAST(-j.amount, CASE WHEN c.reward_system = 'points'
                                     THEN floor(COALESCE(j.purchase_cents, 0) * c.points_ratio / 100)
                                     ELSE round(COALESCE(j.purchase_cents, 0) * c.cashback_percentage / 100) END)::bigint END
  WHEN j.event IN ('referral_bonus', 'event_bonus') OR (j.event = 'staff_adjustment' AND j.amount > 0) THEN
    CASE WHEN l.metric = 'points_earned' AND l.count_bonuses THEN j.amount ELSE 0 END
  ELSE 0 END`;

/**
 * One step of a recompute: the next `limit` members of the card (by member id, after `after`), under
 * their account row locks (earns and refunds of those members wait; others go on): their qualifying
 * days rebuilt from the journal, their window counter reset, and each upgraded at once to the tier
 * its total in the current window reaches (never moved down: that waits for the review; a rank no
 * longer on the ladder becomes the highest one below it). Set-based, four statements. Answers the
 * members done and the last member id.
 */
export async function recomputeMembers(
  db: Queryable,
  card: Pick<Card, 'id' | 'tenant_id' | 'time_zone'>,
  m: { after: number; limit: number; today: string; now: Date; upgraded: string },
): Promise<{ members: number; last: number | undefined }> {
  const { rows } = await db.query<{ member_id: number }>(
    `SELECT member_id FROM ledger.accounts WHERE card_id = $1 AND member_id > $2 ORDER BY member_id LIMIT $3 FOR UPDATE`,
    [card.id, m.after, m.limit],
  );
  if (rows.length === 0) return { members: 0, last: undefined };
  const members = rows.map((r) => r.member_id);
  // The planner's estimates for a step's set statements pass jit_above_cost, and compiling them
  // took a third of a step's time (about 0.5 s of 1.6 s for 5,000 members) for no faster execution.
  await db.query('SET LOCAL jit = off');
  await rebuildDays(db, card.id, members);
  await db.query(
    `WITH l AS (SELECT * FROM ledger.tier_ladders WHERE card_id = $1),
     lowest AS (SELECT min(rank) AS rank FROM ledger.tiers WHERE card_id = $1),
     who AS (
       SELECT a.member_id, a.tenant_id, COALESCE(m.joined_on, (a.created_at AT TIME ZONE $3)::date) AS joined,
              m.rank AS held_rank, m.valid_until
         FROM ledger.accounts a LEFT JOIN ledger.member_tiers m ON m.card_id = a.card_id AND m.member_id = a.member_id
        WHERE a.card_id = $1 AND a.member_id = ANY($2::bigint[])
     ), win AS (
       SELECT w.*, ledger.tier_window_start(l.window_kind, l.window_days, $4::date, w.joined) AS ws,
              ledger.tier_upgrade_until(l.window_kind, l.window_days, l.validity_days, $4::date, w.joined)::timestamp
                AT TIME ZONE $3 AS vu, l.warning_days
         FROM who w CROSS JOIN l
     ), total AS MATERIALIZED (
       SELECT w.*, COALESCE((SELECT sum(d.amount) FROM ledger.tier_days d
                WHERE d.card_id = $1 AND d.member_id = w.member_id AND d.day >= w.ws), 0)::bigint AS qualifying,
              COALESCE((SELECT max(t.rank) FROM ledger.tiers t WHERE t.card_id = $1 AND t.rank <= w.held_rank),
                       (SELECT rank FROM lowest)) AS kept
         FROM win w
     ), decided AS MATERIALIZED (
       SELECT t.*, COALESCE((SELECT max(s.rank) FROM ledger.tiers s
                              WHERE s.card_id = $1 AND s.entry_threshold <= GREATEST(t.qualifying, 0)), t.kept) AS reach
         FROM total t
     )
     INSERT INTO ledger.member_tiers AS m (card_id, member_id, tenant_id, rank, prev_rank, valid_until, warn_at, joined_on,
                                           qualifying, counted_from, updated_at)
     SELECT $1, d.member_id, d.tenant_id, GREATEST(d.kept, d.reach), COALESCE(d.held_rank, d.kept),
            CASE WHEN d.reach > d.kept THEN d.vu WHEN d.held_rank IS NULL THEN NULL ELSE d.valid_until END,
            CASE WHEN d.reach > d.kept THEN d.vu - make_interval(days => d.warning_days)
                 WHEN d.held_rank IS NULL OR d.valid_until IS NULL THEN NULL
                 ELSE d.valid_until - make_interval(days => d.warning_days) END,
            d.joined, d.qualifying, d.ws, $5
       FROM decided d
     ON CONFLICT (card_id, member_id) DO UPDATE SET rank = EXCLUDED.rank, prev_rank = EXCLUDED.prev_rank,
        valid_until = EXCLUDED.valid_until, warn_at = CASE WHEN m.warn_at IS NULL AND m.valid_until = EXCLUDED.valid_until
                                                          THEN NULL ELSE EXCLUDED.warn_at END,
        qualifying = EXCLUDED.qualifying, counted_from = EXCLUDED.counted_from, updated_at = EXCLUDED.updated_at`,
    [card.id, members, card.time_zone, m.today, m.now],
  );
  await announceUpgrades(db, card, members, m);
  return { members: members.length, last: members[members.length - 1] };
}

/**
 * The members' qualifying days, rebuilt from their journal rows on the card under the ladder, in
 * one statement: days whose amount is unchanged are left as they are (a change of thresholds or
 * the window changes none), changed ones updated in place, new ones inserted, and days no longer
 * qualifying deleted.
 */
async function rebuildDays(db: Queryable, cardId: number, members: number[]): Promise<void> {
  await db.query(
    `WITH rebuilt AS (
       SELECT card_id, member_id, day, amount FROM (
         SELECT j.card_id, j.member_id, (j.created_at AT TIME ZONE c.time_zone)::date AS day, sum(${QUALIFYING})::bigint AS amount
           FROM ledger.journal j JOIN ledger.tier_ladders l ON l.card_id = j.card_id JOIN ledger.cards c ON c.id = j.card_id
          WHERE j.card_id = $1 AND j.member_id = ANY($2::bigint[])
          GROUP BY 1, 2, 3) q
        WHERE amount <> 0
     ), written AS (
       INSERT INTO ledger.tier_days AS d (card_id, member_id, day, amount)
       SELECT card_id, member_id, day, amount FROM rebuilt
       ON CONFLICT (card_id, member_id, day) DO UPDATE SET amount = EXCLUDED.amount WHERE d.amount <> EXCLUDED.amount
     )
     DELETE FROM ledger.tier_days d
      WHERE d.card_id = $1 AND d.member_id = ANY($2::bigint[])
        AND NOT EXISTS (SELECT 1 FROM rebuilt r WHERE r.member_id = d.member_id AND r.day = d.day)`,
    [cardId, members],
  );
}

/** One `tier_upgraded` event (reason `recompute`) per member of the step whose rank rose. */
async function announceUpgrades(
  db: Queryable,
  card: Pick<Card, 'id' | 'tenant_id'>,
  members: number[],
  m: { now: Date; upgraded: string },
): Promise<void> {
  await db.query(
    `INSERT INTO ledger.outbox (id, subject, payload)
     SELECT e.id, $3, jsonb_build_object('id', e.id, 'type', 'ledger.tier_upgraded', 'tenant_id', $4::bigint,
              'occurred_at', $5::text, 'data', jsonb_build_object('member_id', e.member_id, 'card_id', $1::bigint,
                'from', f.name, 'to', t.name, 'from_rank', e.prev_rank, 'to_rank', e.rank,
                'valid_until', to_char(e.valid_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'reason', 'recompute'))
       FROM (SELECT gen_random_uuid() AS id, * FROM ledger.member_tiers
              WHERE card_id = $1 AND member_id = ANY($2::bigint[]) AND rank > prev_rank AND updated_at = $6) e
       JOIN ledger.tiers t ON t.card_id = $1 AND t.rank = e.rank
       LEFT JOIN ledger.tiers f ON f.card_id = $1 AND f.rank = e.prev_rank`,
    [card.id, members, m.upgraded, card.tenant_id, m.now.toISOString(), m.now],
  );
}

/**
 * The handler of `tiers.recompute`: every member with an account on the card, a batch per step,
 * each committed with its checkpoint (the last member id). A job for an older version of the
 * ladder than the card's stops at once: the newer one's job does the work.
 */
export function recomputeHandler(deps: {
  pool: Queryable;
  clock: Clock;
  outbox: Outbox;
  cardOf: (tenantId: number, cardId: number) => Promise<Card | undefined>;
  upgradedSubject: string;
  batch?: number;
}): JobHandler<Checkpoint> {
  return async (step: JobStep<Checkpoint>) => {
    const params = paramsOf(step.params);
    const card = await deps.cardOf(step.tenantId, params.card_id);
    const ladder = card && (await findLadder(deps.pool, card.id));
    if (!card || !ladder || ladder.version !== params.version || ladder.steps.length === 0) {
      await step.succeed(undefined, { done: step.done, total: step.done });
      return 'finished';
    }
    const total = step.total ?? (await membersOf(deps.pool, card.id));
    const after = step.checkpoint?.after ?? 0;
    const limit = deps.batch ?? RECOMPUTE_BATCH;
    // The runtime saves the progress after the effects, in their transaction: they fill it in.
    const progress = { checkpoint: { after }, done: step.done, total };
    let members = 0;
    await step.commit(async (db: PoolClient) => {
      const now = deps.clock.now();
      const today = periodKey('day', now, card.time_zone);
      const done = await recomputeMembers(db, card, { after, limit, today, now, upgraded: deps.upgradedSubject });
      members = done.members;
      progress.checkpoint = { after: done.last ?? after };
      progress.done = step.done + done.members;
      deps.outbox.written(db);
    }, progress);
    if (members < limit) {
      await step.succeed(undefined, { done: progress.done, total: progress.done });
      return 'finished';
    }
    return 'more';
  };
}

async function membersOf(db: Queryable, cardId: number): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger.accounts WHERE card_id = $1', [
    cardId,
  ]);
  return rows[0]?.n ?? 0;
}
