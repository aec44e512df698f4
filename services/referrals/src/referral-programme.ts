import { AppError, type Meta, type MemberSummary, type ReferralPeriod, type ServiceMeta } from '@loyalty/contracts';
import {
  withTransaction,
  WithMessage,
  type Clock,
  type Outbox,
  type Pool,
  type Queryable,
  type ReplayStore,
} from '@loyalty/runtime';
import { generateReferralCode, normalizeReferralCode } from './domain/codes.ts';
import {
  appliedReferralView,
  applyMessage,
  checkApplicable,
  existingReferralOutcome,
  type Referral,
} from './domain/referral.ts';
import { periodStart, referralStats } from './domain/stats.ts';
import { referralEventData, type BonusPayments } from './bonus-payments.ts';
import type { ReferralsClients } from './clients.ts';
import { ensureCode, findCode } from './store/codes.ts';
import { countReferrals, findByReferee, insertReferral, referralsOfReferrer, topReferrers } from './store/referrals.ts';

const APPLY_OPERATION = 'referrals.apply';

export interface ProgrammeDeps {
  pool: Pool;
  clients: ReferralsClients;
  payments: BonusPayments;
  outbox: Outbox;
  replays: ReplayStore;
  clock: Clock;
}

const unknownName = (id: number): MemberSummary => ({
  id,
  name: '',
  email: null,
  phone: null,
  has_email: false,
  is_active: false,
});

/** The card, which must be a points card: referral bonuses are points. */
async function pointsCard(clients: ReferralsClients, meta: ServiceMeta, cardId: number) {
  const card = await clients.card(meta, cardId);
  if (card.reward_system !== 'points')
    throw new AppError('wrong_card_type', 'Referrals run on points cards; this card is a cashback card.');
  return card;
}

function applyReply(r: Referral) {
  return new WithMessage({ referral: appliedReferralView(r) }, applyMessage(r));
}

/** The referral programme: codes, validation, application, statistics. */
export function referralProgramme(deps: ProgrammeDeps) {
  return {
    ...referralCodes(deps),
    apply: (d: ApplyRequest, meta: Meta) => applyReferral(deps, d, meta),
    ...referralStatistics(deps),
  };
}
export type ReferralProgramme = ReturnType<typeof referralProgramme>;

function referralCodes(deps: ProgrammeDeps) {
  const { pool, clients } = deps;
  return {
    async code(d: { card_id: number; member_id: number }, meta: Meta) {
      await pointsCard(clients, meta, d.card_id);
      const member = await clients.member(meta, d.member_id);
      const code = await ensureCode(pool, { tenantId: meta.tenant_id, cardId: d.card_id, memberId: member.id }, () =>
        generateReferralCode(),
      );
      return { referral_code: code.code, card_id: code.card_id, member_id: code.member_id };
    },

    async validate(d: { referral_code: string; card_id: number }, meta: Meta) {
      const invalid = { is_valid: false, referrer: null };
      const normalized = normalizeReferralCode(d.referral_code);
      const code = normalized ? await findCode(pool, meta.tenant_id, normalized) : undefined;
      if (!code || code.card_id !== d.card_id) return invalid;
      const [card, members] = await Promise.all([
        clients.card(meta, d.card_id).catch(() => undefined),
        clients.members(meta, [code.member_id]),
      ]);
      const referrer = members.get(code.member_id);
      if (!card || card.reward_system !== 'points' || !referrer || !referrer.is_active) return invalid;
      return {
        is_valid: true,
        referrer: {
          id: referrer.id,
          name: referrer.name,
          bonus_info: { referrer_bonus: card.referrer_bonus, referee_bonus: card.referee_bonus },
        },
      };
    },
  };
}

interface ApplyRequest {
  referral_code: string;
  card_id: number;
  referee_member_id: number;
}

type AppliedReply = { message: string; data: { referral: ReturnType<typeof appliedReferralView> } };

/**
 * The code an apply names, of the card and of a member who still is one: the code of a member
 * erased (a tombstone) is no code, as validate answers, since its bonus would go to nobody.
 */
async function liveCode(deps: ProgrammeDeps, meta: Meta, d: ApplyRequest) {
  const normalized = normalizeReferralCode(d.referral_code);
  const code = normalized ? await findCode(deps.pool, meta.tenant_id, normalized) : undefined;
  if (!code || code.card_id !== d.card_id) throw new AppError('referral_code_not_found');
  const referrer = (await deps.clients.members(meta, [code.member_id])).get(code.member_id);
  if (!referrer || !referrer.is_active) throw new AppError('referral_code_not_found');
  return code;
}

/**
 * Write the referral (pending) first, then pay both bonuses through the ledger, then mark it
 * completed: a crash or failure in between leaves it pending with its payment due, which a
 * retried apply or the sweeper finishes without paying twice.
 */
async function applyReferral(deps: ProgrammeDeps, d: ApplyRequest, meta: Meta) {
  const { pool, clients } = deps;
  const key = meta.idempotency_key;
  const replayKey = (k: string) => ({ tenantId: meta.tenant_id, key: k, operation: APPLY_OPERATION, data: d });
  if (key) {
    const replay = await deps.replays.find<AppliedReply>(replayKey(key));
    if (replay) return new WithMessage(replay.data, replay.message, true);
  }
  const remember = async (db: Queryable, r: Referral) => {
    if (!key) return;
    const reply = applyReply(r);
    await deps.replays.save(db, replayKey(key), { message: reply.message, data: reply.data });
  };

  const card = await pointsCard(clients, meta, d.card_id);
  const code = await liveCode(deps, meta, d);
  const referee = await clients.member(meta, d.referee_member_id);
  checkApplicable(card, code.member_id, referee.id);

  const now = deps.clock.now();
  const waitForPurchase = card.referral_bonus_on_first_purchase;
  const inserted = await withTransaction(pool, async (db) => {
    const r = await insertReferral(db, {
      tenantId: meta.tenant_id,
      cardId: d.card_id,
      referrerId: code.member_id,
      refereeId: referee.id,
      code: code.code,
      referrerBonus: card.referrer_bonus,
      refereeBonus: card.referee_bonus,
      paymentDueAt: waitForPurchase ? null : now,
      applyKey: key ?? null,
      createdAt: now,
    });
    if (!r) return undefined;
    await deps.outbox.record(db, {
      type: 'referral_applied',
      tenantId: meta.tenant_id,
      data: referralEventData(r),
      occurredAt: now,
    });
    if (waitForPurchase) await remember(db, r);
    return r;
  });

  let referral = inserted;
  if (!referral) {
    const existing = await findByReferee(pool, meta.tenant_id, d.card_id, referee.id);
    const outcome = existing ? existingReferralOutcome(existing, code.member_id, key) : 'already_applied';
    if (!existing || outcome === 'already_applied') throw new AppError('referral_already_applied');
    referral = existing; // a retry of the apply that created it
    if (outcome === 'answer') {
      await remember(pool, referral);
      return applyReply(referral);
    }
  }
  if (referral.payment_due_at === null) return applyReply(referral); // waits for the first purchase
  const done = await deps.payments.pay(meta, referral, remember);
  return applyReply(done);
}

function referralStatistics(deps: ProgrammeDeps) {
  const { pool, clients, clock } = deps;
  return {
    async stats(d: { card_id: number; period: ReferralPeriod }, meta: ServiceMeta) {
      await pointsCard(clients, meta, d.card_id);
      const counts = await countReferrals(pool, d.card_id, periodStart(d.period, clock.now()));
      return { stats: referralStats(counts), period: d.period };
    },

    async topReferrers(d: { card_id: number; period: ReferralPeriod; limit: number }, meta: ServiceMeta) {
      await pointsCard(clients, meta, d.card_id);
      const top = await topReferrers(pool, d.card_id, periodStart(d.period, clock.now()), d.limit);
      const members = await clients.members(
        meta,
        top.rows.map((r) => r.referrer_id),
      );
      return {
        referrers: top.rows.map((r) => {
          const m = members.get(r.referrer_id) ?? unknownName(r.referrer_id);
          return {
            member_id: r.referrer_id,
            name: m.name,
            email: m.email,
            total_referrals: r.total,
            successful_referrals: r.successful,
          };
        }),
        total: top.total,
      };
    },

    async referralsOf(d: { card_id: number; member_id: number; limit: number; offset: number }, meta: ServiceMeta) {
      await pointsCard(clients, meta, d.card_id);
      const referrer = await clients.member(meta, d.member_id);
      const page = await referralsOfReferrer(pool, d.card_id, referrer.id, d.limit, d.offset);
      const members = await clients.members(
        meta,
        page.rows.map((r) => r.referee_id),
      );
      return {
        referrals: page.rows.map((r) => {
          const m = members.get(r.referee_id) ?? unknownName(r.referee_id);
          return {
            id: r.id,
            referee_name: m.name,
            referee_email: m.email,
            status: r.status,
            bonus_points: r.referrer_bonus,
            created_at: r.created_at.toISOString(),
          };
        }),
        total: page.total,
      };
    },
  };
}
