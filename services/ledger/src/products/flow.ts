import { AppError, type MemberSummary } from '@loyalty/contracts';
import type { PoolClient } from '@loyalty/runtime';
import type { Accounting, BalanceChange, LedgerDeps, LedgerMeta, RefundChange } from '../accounting.ts';
import { qualifyingOfEarn, stepOfRank } from '../domain/tiers.ts';
import { findMemberTier, lowerQualifying } from '../store/tiers.ts';
import { periodKey } from '../domain/rules/index.ts';
import {
  earnTierView,
  MemberRanks,
  rulesReadTier,
  StaleTierRank,
  tierBadge,
  tierForRules,
  tierMove,
} from '../tiers/moves.ts';
import { memberBy } from '../accounting.ts';
import { cardOfKind } from '../card-catalogue.ts';
import { toCents } from '../domain/money.ts';
import { journalEvents, type JournalEvents } from '../events.ts';
import { lotTerms } from '../lots/terms.ts';
import { findBalance, type AccountKey } from '../store/accounts.ts';
import { insertJournalRules } from '../store/rules.ts';
import { ruleRefund, type RuleRefund } from './rule-refund.ts';
import type { RuledCard } from '../card-cache.ts';
import type { AppliedRule, CompiledRule, Evaluation } from '../domain/rules/index.ts';
import {
  evaluatePurchase,
  journalRulesOf,
  purchaseFacts,
  purchaseNumber,
  recordRuleEffects,
  stateless,
  usageState,
  type PurchaseFacts,
  type RuleUsageState,
} from './rule-earn.ts';
import type { BalanceWarning, EarnRequest, Earned, ProductTypes, ProductUnit, Refunded } from './unit.ts';

/** What an earn credits: the amount, the rules beyond the base that gave, and what the journal row records of them. */
interface EarnFigures {
  amount: number;
  /** The base earn (rule zero) within `amount`: what qualifies for a tier when bonuses do not count. */
  base: number;
  purchaseCents: number;
  applied: AppliedRule[];
  rules?: { rules: unknown[]; allocation: unknown };
  /** The member's rank the rules were evaluated with, read before the posting (which checks it). */
  assumedRank?: number | null;
}

/** An earn's request with what the ledger found for it: the card, its purchase rules, the member and the purchase's facts. */
interface Purchase {
  d: EarnRequest;
  card: RuledCard;
  rules: CompiledRule[];
  buyer: { member: MemberSummary; created: boolean };
  facts: PurchaseFacts;
}

/** The earn's reference (unique per card), if it has one. */
const earnReferenceOf = ({ d, card }: Purchase) =>
  d.reference === undefined ? undefined : { cardId: card.id, reference: d.reference };

/** Attempts of an earn whose member's rank changed under it before it gives up (503, retryable). */
const MAX_RANK_ATTEMPTS = 5;

/** No cap or budget used: rules without state read none. */
const NO_USAGE: RuleUsageState = { member: new Map(), budgets: new Map() };

function ruledFigures(evaluation: Evaluation, facts: PurchaseFacts): EarnFigures {
  return {
    amount: evaluation.total,
    base: evaluation.base,
    purchaseCents: facts.cents,
    applied: evaluation.applied,
    rules: journalRulesOf(evaluation),
  };
}

/**
 * One product's public operations (earn, redeem, refund, balance, history), the same flow for
 * points and cashback: `unit` says what differs between them. Money is cents inside.
 */
export class ProductFlow<T extends ProductTypes> {
  protected readonly events: JournalEvents;
  /** Members' tiers read before earns outside a transaction (concurrent reads batched). */
  private readonly ranks: MemberRanks;

  constructor(
    protected readonly deps: LedgerDeps,
    protected readonly books: Accounting,
    protected readonly unit: ProductUnit<T>,
  ) {
    this.events = journalEvents(deps.outbox);
    this.ranks = new MemberRanks(deps.pool);
  }

  /**
   * Credit a purchase's amount (the card's formula) to the member, whom an email or phone may
   * create. On a card with earning rules the rules are evaluated and the credit posted in one
   * transaction (rule-earn.ts); without rules the earn is what it always was.
   */
  async earn(d: EarnRequest, meta: LedgerMeta): Promise<T['earnAnswer']> {
    const { unit } = this;
    const card = await this.card(meta, d.card_id);
    const facts = purchaseFacts(d);
    const earnKey = { operation: unit.operations.earn, data: d, source: 'http' as const };
    const resolved = await this.deps.members
      .resolve(meta, memberBy(d), { name: d.member_name })
      .catch((err: unknown) =>
        this.books.answeredBefore<T['earnAnswer']>(meta, earnKey, err).then((first) => ({ first })),
      );
    if ('first' in resolved) return resolved.first;
    const { member, created } = resolved;
    if (!member.is_active) throw new AppError('member_inactive');
    const buyer = { member, created };
    const rules = card.rules.filter((r) => r.kind !== 'event');
    // Rules that keep state (caps, budgets, purchase counts) are decided inside a transaction.
    const purchase: Purchase = { d, card, rules, buyer, facts };
    if (!stateless(rules)) return this.earnWithRules(meta, purchase);
    // A rule with a tier condition is evaluated with the member's rank before the earn (that earn's
    // own upgrade counts from the next one); the posting checks it is still the member's.
    let rank = rulesReadTier(card, rules) ? await this.ranks.rank(card.id, member.id) : undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.postEarn(meta, purchase, rank);
      } catch (err) {
        if (!(err instanceof StaleTierRank)) throw err;
        this.ranks.learn(card.id, member.id, err.rank);
        // Only a rank changing again at each attempt (by other earns of the member) gets here.
        if (attempt === MAX_RANK_ATTEMPTS) throw new AppError('service_unavailable');
        rank = err.rank;
      }
    }
  }

  /** An earn whose rules keep no state, posted as `Accounting.posting` posts (its rules evaluated with `rank` when they read the tier). */
  private postEarn(meta: LedgerMeta, purchase: Purchase, rank: number | null | undefined): Promise<T['earnAnswer']> {
    const { unit } = this;
    const { d, card, rules, buyer, facts } = purchase;
    const earnReference = earnReferenceOf(purchase);
    const tier = rank === undefined || card.tiers === null ? null : stepOfRank(card.tiers, rank ?? undefined).name;
    return this.books.posting(
      meta,
      { operation: unit.operations.earn, data: d, source: 'http', direction: 'credit', earnReference },
      (at) => {
        // Without rules and line items this is the card's formula, as always; otherwise the rules'
        // evaluation, whose versions (and lines, for refunds by line) the posting statement records.
        if (rules.length === 0 && facts.lines === null) {
          const amount = unit.earned(card, facts.cents);
          const figures = { amount, base: amount, purchaseCents: facts.cents, applied: [] };
          return this.earnPosting(meta, d, card, buyer, figures, at);
        }
        const evaluation = evaluatePurchase(card, rules, facts, NO_USAGE, at, 0, tier);
        return this.earnPosting(meta, d, card, buyer, { ...ruledFigures(evaluation, facts), assumedRank: rank }, at);
      },
      (change, posting) => {
        if (rank !== undefined && change.tier !== undefined)
          this.ranks.learn(card.id, buyer.member.id, change.tier.rank);
        return this.withTier(card, unit.earnAnswer(posting.earned, change), change);
      },
    );
  }

  /** An earn's answer on a card with tiers carries the member's tier after it (absent otherwise). */
  private withTier(card: RuledCard, answer: T['earnAnswer'], change: BalanceChange): T['earnAnswer'] {
    if (card.tiers === null || change.tier === undefined) return answer;
    return { ...answer, tier: earnTierView(card.tiers, change.tier) };
  }

  /** An earn on a card with rules: account locked, caps and budgets read, evaluated, posted, counted. */
  private earnWithRules(meta: LedgerMeta, purchase: Purchase): Promise<T['earnAnswer']> {
    const { unit } = this;
    const { d, card, rules, buyer, facts } = purchase;
    const earnReference = earnReferenceOf(purchase);
    const k = { tenantId: meta.tenant_id, cardId: card.id, memberId: buyer.member.id };
    const opts = { operation: unit.operations.earn, data: d, source: 'http' as const, earnReference };
    return this.books.earnInTransaction(meta, opts, async (db) => {
      const at = this.deps.clock.now();
      await this.books.settleLocked(db, k, at, true);
      const number = await purchaseNumber(db, rules, k, unit.labels.earn);
      const state = await usageState(db, rules, k.memberId, at, card.time_zone, true);
      const tier = await tierForRules(db, card, rules, k.memberId);
      const evaluation = evaluatePurchase(card, rules, facts, state, at, number, tier);
      const p = this.earnPosting(meta, d, card, buyer, ruledFigures(evaluation, facts), at);
      const change = await this.books.credit(db, p);
      await recordRuleEffects(db, this.deps.outbox, {
        card,
        memberId: k.memberId,
        journalId: change.entry.id,
        evaluation,
        rules,
        at,
      });
      return this.withTier(card, unit.earnAnswer(p.earned, change), change);
    });
  }

  /** An earn's posting: the credit, its lot, its journal row and its event. */
  private earnPosting(
    meta: LedgerMeta,
    d: EarnRequest,
    card: RuledCard,
    buyer: { member: MemberSummary; created: boolean },
    figures: EarnFigures,
    at: Date,
  ) {
    const { unit, events } = this;
    const qualifies = card.tiers && qualifyingOfEarn(card.tiers, figures);
    const lot = lotTerms(card, at, 'purchase');
    const earned: Earned = {
      card,
      member: buyer.member,
      created: buyer.created,
      amount: figures.amount,
      purchaseCents: figures.purchaseCents,
      reference: d.reference,
      lot,
      rulesApplied: figures.applied,
    };
    return {
      account: { tenantId: meta.tenant_id, cardId: card.id, memberId: buyer.member.id },
      movement: {
        event: unit.labels.earn,
        amount: figures.amount,
        purchaseCents: figures.purchaseCents,
        reference: d.reference,
        metadata: d.metadata,
        at,
        lot,
        rules: figures.rules,
        tier: tierMove(this.deps.outbox, card, at, qualifies || 0, figures.assumedRank),
      },
      // Identity mails the member on a points earn (once, even if it is delivered again).
      event: events.posting(unit.eventUnit, {
        tenantId: meta.tenant_id,
        event: unit.labels.earn,
        at,
        data: unit.earnEvent(earned),
      }),
      earned,
    };
  }

  /** The member (by token) spends the redemption's amount, only if the spendable balance covers it. */
  async redeem(d: T['redeemRequest'], meta: LedgerMeta): Promise<T['redeemAnswer']> {
    const { unit, events } = this;
    const memberId = meta.member_id;
    if (memberId === undefined) throw new AppError('member_token_required');
    const card = await this.card(meta, d.card_id);
    const redemption = await unit.redemption(this.deps, card, d, meta, memberId);
    const redeemed = { card, memberId, redemption, reference: d.reference };
    return this.books.posting(
      meta,
      {
        operation: unit.operations.redeem,
        data: { ...unit.redeemParameters(d), member_id: memberId },
        source: 'http',
        direction: 'debit',
        uncovered: async (db) => unit.insufficient((await findBalance(db, card.id, memberId)) ?? 0, redemption.amount),
      },
      (at) => ({
        account: { tenantId: meta.tenant_id, cardId: card.id, memberId },
        movement: {
          event: unit.labels.redeem,
          amount: redemption.amount,
          reference: d.reference,
          rewardId: redemption.rewardId,
          at,
        },
        event: events.posting(unit.eventUnit, {
          tenantId: meta.tenant_id,
          event: unit.labels.redeem,
          at,
          data: unit.redeemEvent(redeemed),
        }),
      }),
      (change) => unit.redeemAnswer(redeemed, change),
    );
  }

  /**
   * The refund of a purchase: the card's formula on the refund amount, or the deduction the
   * request names, capped by what a named purchase earned (Accounting.refund). One transaction.
   */
  async refund(d: T['refundRequest'], meta: LedgerMeta): Promise<T['refundAnswer']> {
    const { unit } = this;
    const card = await this.card(meta, d.card_id);
    const refundKey = { operation: unit.operations.refund, data: d, source: 'http' as const };
    const resolved = await this.books
      .refundMember(meta, d)
      .catch((err: unknown) =>
        this.books.answeredBefore<T['refundAnswer']>(meta, refundKey, err).then((first) => ({ first })),
      );
    if (typeof resolved === 'object') return resolved.first;
    const memberId = resolved;
    const refundCents = toCents(d.refund_amount);
    const explicit = unit.explicitDeduction(d);
    const requested = explicit ?? unit.earned(card, refundCents);
    const k = { tenantId: meta.tenant_id, cardId: card.id, memberId };
    const reference = d.reference;
    return this.books.inTransaction(meta, refundKey, async (db) => {
      const at = this.deps.clock.now();
      // A purchase that earning rules shaped is refunded by what it earned (by line, or in proportion).
      const byRules = explicit === undefined ? await this.ruleRefund(db, k, d, refundCents, at) : undefined;
      const change = await this.books.refund(db, k, {
        event: unit.labels.refund,
        requested: byRules?.requested ?? requested,
        explicit: explicit !== undefined,
        refundCents,
        reference,
        at,
      });
      if (byRules) await insertJournalRules(db, { ...byRules.record, journalId: change.entry.id });
      await this.lowerTierQualifying(db, card, k, refundCents, change.plan.deducted, at);
      const refunded: Refunded = {
        card,
        memberId,
        refundCents,
        reference,
        at,
        change,
        warning: this.warning(change),
      };
      await this.events.record(db, {
        tenantId: meta.tenant_id,
        event: unit.labels.refund,
        at,
        data: unit.refundEvent(refunded),
      });
      return unit.refundAnswer(refunded);
    });
  }

  async balance(d: { card_id: number; member_id: number }, meta: LedgerMeta): Promise<T['balanceAnswer']> {
    const card = await this.card(meta, d.card_id);
    const account = await this.books.accountOf(meta, card.id, d.member_id);
    const answer = this.unit.balanceAnswer(card, d.member_id, account, this.deps.clock.now());
    if (card.tiers === null) return answer;
    const row = await findMemberTier(this.deps.pool, card.id, d.member_id);
    return { ...answer, tier: tierBadge(card.tiers, row) };
  }

  async history(d: { card_id: number; member_id: number; limit: number; offset: number }, meta: LedgerMeta) {
    const card = await this.card(meta, d.card_id);
    const { entries, total } = await this.books.historyPage(meta, card.id, d.member_id, d.limit, d.offset);
    return {
      card_id: card.id,
      member_id: d.member_id,
      transactions: entries.map((e): T['historyEntry'] => this.unit.historyEntry(e)),
      pagination: { limit: d.limit, offset: d.offset, total, has_more: d.offset + entries.length < total },
    };
  }

  /** The refund of a purchase that rules shaped, under the account's lock; undefined: the card's formula applies. */
  private async ruleRefund(
    db: PoolClient,
    k: AccountKey,
    d: T['refundRequest'],
    refundCents: number,
    at: Date,
  ): Promise<RuleRefund | undefined> {
    if (d.reference === undefined) return undefined;
    await this.books.settleLocked(db, k, at, true);
    return ruleRefund(db, k, d, refundCents);
  }

  /**
   * A refund on a card with tiers lowers the member's qualifying total by the purchase refunded
   * (amount_spent) or what it took back (points_earned; at most the card's base earn on the
   * refund when bonuses do not count). It never moves the tier: that waits for the review.
   */
  private async lowerTierQualifying(
    db: PoolClient,
    card: RuledCard,
    k: AccountKey,
    refundCents: number,
    deducted: number,
    at: Date,
  ): Promise<void> {
    const ladder = card.tiers;
    if (ladder === null) return;
    const amount =
      ladder.metric === 'amount_spent'
        ? refundCents
        : ladder.countBonuses
          ? deducted
          : Math.min(deducted, this.unit.earned(card, refundCents));
    if (amount <= 0) return;
    await lowerQualifying(db, k, {
      day: periodKey('day', at, card.time_zone),
      window: ladder.window,
      windowDays: ladder.windowDays,
      amount,
      at,
    });
  }

  /** The tenant's card of this product. */
  protected card(meta: LedgerMeta, cardId: number): Promise<RuledCard> {
    return cardOfKind(this.deps.cards, meta.tenant_id, cardId, this.unit.kind);
  }

  /** What a refund the balance could not cover reports, in the interface's numbers. */
  private warning({ plan }: RefundChange): BalanceWarning | null {
    const w = plan.warning;
    return (
      w && {
        code: 'insufficient_balance',
        message: 'The balance could not cover the whole deduction; the balance was deducted to zero.',
        requested: this.unit.value(w.requested),
        deducted: this.unit.value(w.deducted),
        uncovered: this.unit.value(w.uncovered),
      }
    );
  }
}
