import {
  AppError,
  type CashbackQuoteBody,
  type MemberSummary,
  type PointsQuoteBody,
  type QuoteWarning,
} from '@loyalty/contracts';
import type { z } from 'zod';
import type { Accounting, AccountView, LedgerDeps, LedgerMeta } from '../accounting.ts';
import { EMPTY_ACCOUNT, memberBy } from '../accounting.ts';
import { cardOfKind, cashbackPercentage } from '../card-catalogue.ts';
import { fromCents, MAX_BALANCE, toCents } from '../domain/money.ts';
import { lotTerms } from '../lots/terms.ts';
import { earnByReference, type AccountKey } from '../store/accounts.ts';
import { rulesReadTier, tierForRules } from '../tiers/moves.ts';
import { stepOfRank } from '../domain/tiers.ts';
import type { RuledCard } from '../card-cache.ts';
import {
  evaluatePurchase,
  purchaseFacts,
  purchaseNumber,
  usageState,
  type LineItemInput,
  type PurchaseFacts,
} from './rule-earn.ts';
import { ruleRefund, type RuleRefund } from './rule-refund.ts';
import { ruleQuoteView, simulatedRules, type RuleQuote, type Simulation, type SimulatedRule } from './rule-quote.ts';
import { findReward, type Card } from '../store/cards.ts';
import { cashbackUnit } from './cashback.ts';
import { pointsUnit } from './points.ts';
import type { EarnRequest, MemberRef, ProductTypes, ProductUnit } from './unit.ts';

type Warning = QuoteWarning;

/** A quote's body: the operation's own body, with `operation` naming which. */
type QuoteBody<T extends ProductTypes, Redeem> =
  | ({ operation: 'earn' } & EarnRequest)
  | ({ operation: 'redeem'; reference?: string } & MemberRef & Redeem)
  | ({ operation: 'refund' } & T['refundRequest']);

/** What a redemption would take, in the unit, and what would refuse it. */
interface RedeemFigures {
  amount: number;
  warnings: Warning[];
  reward?: { id: number; name: string };
}

/** What the operation would do, in the card's unit (points or cents); the products' views convert it. */
interface Outcome {
  wouldSucceed: boolean;
  amount: number;
  account: AccountView;
  newBalance: number;
  newPending: number;
  availableAt: string | null;
  expiresAt: string | null;
  warnings: Warning[];
  reward?: { id: number; name: string };
}

/** A quote: the member it is for (null: one the earn would create) and the outcome. */
interface Quote extends Outcome {
  memberId: number | null;
  isNew: boolean;
  /** An earn on a card with rules (or a simulation): the base, the rules that would give, the trace. */
  rules?: RuleQuote;
}

/** A business rule that would refuse the operation: the quote reports it instead of failing. */
const refusal = (code: Warning['code'], message: string): Warning => ({ code, message });

/** Who asks for a quote: an app's meta, with the scopes its credentials hold. */
type QuoteMeta = LedgerMeta & { scopes: readonly string[] };

/**
 * Drafts, paused rules and rules named by id are the programme's work not yet (or no longer) live:
 * only an app that manages the programme may simulate them (`include_drafts`, `rule_ids`), as only
 * it may read them. Any quote scope still quotes what the card's active rules do.
 */
function mayInspectRules(d: { operation: string; include_drafts?: boolean; rule_ids?: number[] }, meta: QuoteMeta) {
  if (d.operation !== 'earn' || (d.include_drafts !== true && d.rule_ids === undefined)) return;
  if (meta.scopes.includes('programme_manage')) return;
  throw new AppError(
    'insufficient_scope',
    'Simulating draft or named rules (include_drafts, rule_ids) needs the programme_manage scope.',
    { required_scope: 'programme_manage' },
  );
}

/** What a refund refuses before its figures: a quote answers them as warnings. */
const REFUND_REFUSALS: ReadonlySet<string> = new Set(['line_items_mismatch', 'refund_reference_mismatch']);

/** An outcome that changes nothing (a refusal found before the figures). */
const unchanged = (account: AccountView, warnings: Warning[]): Outcome => ({
  wouldSucceed: false,
  amount: 0,
  account,
  newBalance: account.balance,
  newPending: account.pending,
  availableAt: null,
  expiresAt: null,
  warnings,
});

/**
 * Quotes: the same formulas (the products' units), the same refund plan and the same account
 * state as the operations, read without a lock and without writing anything (no member is
 * created, no key is stored, nothing is published). A concurrent change can make the operation
 * differ from its quote; the operation itself decides under the account's lock.
 */
export class Quotes {
  constructor(
    private readonly deps: LedgerDeps,
    private readonly books: Accounting,
  ) {}

  async points(d: z.output<typeof PointsQuoteBody>, meta: QuoteMeta) {
    mayInspectRules(d, meta);
    const card = await cardOfKind(this.deps.cards, meta.tenant_id, d.card_id, 'points');
    const q = await this.quote(card, meta, d, pointsUnit, (r: { reward_id: number }) =>
      this.rewardRedemption(card, meta, r.reward_id),
    );
    return {
      ...common(q, card, d.operation),
      points: q.amount,
      points_balance: q.account.balance,
      new_balance: q.newBalance,
      pending_points: q.account.pending,
      new_pending_points: q.newPending,
      ...(q.reward ? { reward_id: q.reward.id, reward_name: q.reward.name } : {}),
      warnings: q.warnings,
      ...(q.rules ? ruleQuoteView(card, q.rules) : {}),
    };
  }

  async cashback(d: z.output<typeof CashbackQuoteBody>, meta: QuoteMeta) {
    mayInspectRules(d, meta);
    const card = await cardOfKind(this.deps.cards, meta.tenant_id, d.card_id, 'cashback');
    const q = await this.quote(card, meta, d, cashbackUnit, async (r: { amount: number }) => ({
      amount: toCents(r.amount),
      warnings: card.allows_pin_redemption
        ? [refusal('pin_required', "The redemption will ask for the member's PIN (a quote does not check it).")]
        : [],
    }));
    return {
      ...common(q, card, d.operation),
      amount: fromCents(q.amount),
      cashback_balance: fromCents(q.account.balance),
      new_balance: fromCents(q.newBalance),
      pending_cashback: fromCents(q.account.pending),
      new_pending_cashback: fromCents(q.newPending),
      ...(d.operation === 'earn' ? { cashback_percentage: cashbackPercentage(card) } : {}),
      currency: card.currency,
      warnings: q.warnings,
      ...(q.rules ? ruleQuoteView(card, q.rules) : {}),
    };
  }

  /**
   * The console's preview: what a sample purchase would earn on the card with its active rules,
   * its drafts and paused rules, with the trace (no member needed; a member_id brings its caps: an
   * unknown, foreign or erased member is member_not_found, as in a quote, not a new member's preview).
   */
  async preview(
    d: { card_id: number; purchase_amount: number; line_items?: LineItemInput[]; tags?: string[]; member_id?: number },
    meta: { tenant_id: number; request_id: string },
  ) {
    const tenantId = meta.tenant_id;
    const card = await this.deps.cards.get(tenantId, d.card_id);
    if (!card) throw new AppError('card_not_found');
    if (d.member_id !== undefined) await this.deps.members.mustExist(meta, d.member_id);
    const facts = purchaseFacts(d);
    const rules = await simulatedRules(this.deps.pool, card, { include_drafts: true });
    const k = d.member_id === undefined ? undefined : { tenantId, cardId: card.id, memberId: d.member_id };
    const ruled = await this.ruleQuote(card, rules, facts, k);
    const view = ruleQuoteView(card, ruled);
    const total = ruled.evaluation.total;
    return { card_id: card.id, total: card.reward_system === 'points' ? total : fromCents(total), ...view };
  }

  /** What the body's operation would do on `card` in the unit; `redeem` names what a redemption takes. */
  private async quote<T extends ProductTypes, Redeem>(
    card: RuledCard,
    meta: LedgerMeta,
    d: QuoteBody<T, Redeem>,
    unit: ProductUnit<T>,
    redeem: (d: Redeem) => Promise<RedeemFigures>,
  ): Promise<Quote> {
    if (d.operation === 'earn') return this.earnQuote(card, meta, d, unit);
    const { member } = await this.deps.members.resolve(meta, memberBy(d));
    const k = { tenantId: meta.tenant_id, cardId: card.id, memberId: member.id };
    const who = { memberId: member.id, isNew: false };
    if (d.operation === 'refund') return { ...who, ...(await this.refundOutcome(card, k, d, unit)) };
    const account = (await this.books.findAccount(k)) ?? EMPTY_ACCOUNT;
    return { ...who, ...redeemOutcome(account, await redeem(d), unit) };
  }

  /** An earn may name a member it would create (an email or phone identity does not know). */
  private async earnQuote<T extends ProductTypes>(
    card: RuledCard,
    meta: LedgerMeta,
    d: EarnRequest & Simulation,
    unit: ProductUnit<T>,
  ): Promise<Quote> {
    const facts = purchaseFacts(d);
    const { member, isNew } = await this.memberOrNew(meta, d);
    const rules = await simulatedRules(this.deps.pool, card, d);
    const ruled =
      rules.length > 0 || d.include_drafts === true || d.rule_ids !== undefined
        ? await this.ruleQuote(card, rules, facts, member && this.key(meta, card, member), isNew)
        : undefined;
    const amount = ruled ? ruled.evaluation.total : unit.earned(card, facts.cents);
    const account = (member && (await this.books.findAccount(this.key(meta, card, member)))) ?? EMPTY_ACCOUNT;
    const lot = lotTerms(card, this.deps.clock.now(), 'purchase');
    const warnings: Warning[] = [];
    if (member && !member.is_active) warnings.push(refusal('member_inactive', 'The member is not active.'));
    if (d.reference !== undefined && (await earnByReference(this.deps.pool, card.id, d.reference)))
      warnings.push(refusal('duplicate_reference', 'A purchase with this reference was already credited on the card.'));
    if (account.balance + account.pending + account.held + amount > MAX_BALANCE)
      warnings.push(refusal('balance_limit_exceeded', 'The credit would take the balance past its maximum.'));
    const credited = warnings.length === 0 ? amount : 0;
    return {
      ...(ruled ? { rules: ruled } : {}),
      memberId: member?.id ?? null,
      isNew,
      wouldSucceed: warnings.length === 0,
      amount,
      account,
      newBalance: account.balance + (lot.pending ? 0 : credited),
      newPending: account.pending + (lot.pending ? credited : 0),
      availableAt: lot.availableAt.toISOString(),
      expiresAt: lot.expiresAt?.toISOString() ?? null,
      warnings,
    };
  }

  /**
   * The rules evaluated as the earn would now (usage read without locks): what they give and why.
   * A member the earn would create (`isNew`) holds the lowest tier, as the earn evaluates them.
   */
  private async ruleQuote(
    card: RuledCard,
    rules: SimulatedRule[],
    facts: PurchaseFacts,
    k: AccountKey | undefined,
    isNew = false,
  ): Promise<RuleQuote> {
    const at = this.deps.clock.now();
    const compiled = rules.map((r) => r.rule);
    const number = await purchaseNumber(
      this.deps.pool,
      compiled,
      k,
      card.reward_system === 'points' ? 'staff_added_points' : 'cashback_earned',
    );
    const state = await usageState(this.deps.pool, compiled, k?.memberId, at, card.time_zone, false);
    const tier =
      k !== undefined
        ? await tierForRules(this.deps.pool, card, compiled, k.memberId)
        : isNew && card.tiers !== null && rulesReadTier(card, compiled)
          ? stepOfRank(card.tiers, undefined).name
          : null;
    const evaluation = evaluatePurchase(card, compiled, facts, state, at, number, tier);
    const statuses = new Map(rules.map((r) => [r.rule.id, r.status]));
    return { evaluation, statuses };
  }

  /**
   * A refund as the refund would decide it: an explicit deduction, else what the purchase's rules
   * gave (by line, or in proportion: rule-refund.ts, read without the account's lock), else the
   * card's formula. A reference or lines that do not fit the purchase are warnings, as in a refund.
   */
  private async refundOutcome<T extends ProductTypes>(
    card: RuledCard,
    k: AccountKey,
    d: { operation: 'refund' } & T['refundRequest'],
    unit: ProductUnit<T>,
  ): Promise<Outcome> {
    const explicit = unit.explicitDeduction(d);
    const refundCents = toCents(d.refund_amount);
    let byRules: RuleRefund | undefined;
    try {
      byRules = explicit === undefined ? await ruleRefund(this.deps.pool, k, d, refundCents) : undefined;
    } catch (err) {
      if (!(err instanceof AppError) || !REFUND_REFUSALS.has(err.code)) throw err;
      const account = (await this.books.findAccount(k)) ?? EMPTY_ACCOUNT;
      return unchanged(account, [
        refusal(err.code === 'line_items_mismatch' ? err.code : 'refund_reference_mismatch', err.message),
      ]);
    }
    const requested = explicit ?? byRules?.requested ?? unit.earned(card, refundCents);
    return this.refundQuote(k, d.reference, requested, explicit !== undefined, unit);
  }

  private async refundQuote<T extends ProductTypes>(
    k: AccountKey,
    reference: string | undefined,
    requested: number,
    explicit: boolean,
    unit: ProductUnit<T>,
  ): Promise<Outcome> {
    try {
      const { account, plan, fromPending } = await this.books.refundQuote(k, { requested, explicit, reference });
      const w = plan.warning;
      return {
        wouldSucceed: true,
        amount: plan.deducted,
        account,
        newBalance: account.balance - (plan.deducted - fromPending),
        newPending: account.pending - fromPending,
        availableAt: null,
        expiresAt: null,
        warnings: w
          ? [
              {
                code: 'insufficient_balance',
                message: 'The balance cannot cover the whole deduction; the balance would be deducted to zero.',
                requested: unit.value(w.requested),
                deducted: unit.value(w.deducted),
                uncovered: unit.value(w.uncovered),
              },
            ]
          : [],
      };
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'refund_reference_mismatch') throw err;
      const account = (await this.books.findAccount(k)) ?? EMPTY_ACCOUNT;
      return unchanged(account, [refusal('refund_reference_mismatch', err.message)]);
    }
  }

  /** A points redemption takes its reward's cost; an unknown reward is not found, an inactive one refused. */
  private async rewardRedemption(card: Card, meta: LedgerMeta, rewardId: number): Promise<RedeemFigures> {
    const reward = await findReward(this.deps.pool, meta.tenant_id, card.id, rewardId);
    if (!reward) throw new AppError('reward_not_found');
    return {
      amount: reward.points_cost,
      warnings: reward.active ? [] : [refusal('reward_inactive', 'The reward is not active.')],
      reward: { id: reward.id, name: reward.name },
    };
  }

  /** The member the earn names; one identity does not know is one the earn would create (not by member_id). */
  private async memberOrNew(
    meta: LedgerMeta,
    d: MemberRef,
  ): Promise<{ member: MemberSummary | undefined; isNew: boolean }> {
    try {
      return { member: (await this.deps.members.resolve(meta, memberBy(d))).member, isNew: false };
    } catch (err) {
      const creatable = d.member_id === undefined && err instanceof AppError && err.code === 'member_not_found';
      if (creatable) return { member: undefined, isNew: true };
      throw err;
    }
  }

  private key(meta: LedgerMeta, card: Card, member: MemberSummary): AccountKey {
    return { tenantId: meta.tenant_id, cardId: card.id, memberId: member.id };
  }
}

export function quotes(deps: LedgerDeps, books: Accounting): Quotes {
  return new Quotes(deps, books);
}

/** A redemption's outcome: refused by the figures' warnings or by a balance that does not cover it. */
function redeemOutcome<T extends ProductTypes>(
  account: AccountView,
  redeem: RedeemFigures,
  unit: ProductUnit<T>,
): Outcome {
  const warnings = [...redeem.warnings];
  if (warnings.length === 0 && redeem.amount > account.balance)
    warnings.push(
      refusal(
        unit.kind === 'points' ? 'insufficient_points' : 'insufficient_balance',
        'The spendable balance does not cover the redemption.',
      ),
    );
  const refused = warnings.some((w) => w.code !== 'pin_required');
  return {
    wouldSucceed: !refused,
    account,
    amount: redeem.amount,
    newBalance: account.balance - (refused ? 0 : redeem.amount),
    newPending: account.pending,
    availableAt: null,
    expiresAt: null,
    warnings,
    reward: redeem.reward,
  };
}

const common = (q: Quote, card: Card, operation: 'earn' | 'redeem' | 'refund') => ({
  operation,
  card_id: card.id,
  member_id: q.memberId,
  is_new_member: q.isNew,
  would_succeed: q.wouldSucceed,
  available_at: q.availableAt,
  expires_at: q.expiresAt,
});
