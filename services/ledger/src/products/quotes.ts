import { AppError, type CashbackQuoteBody, type PointsQuoteBody, type QuoteWarning } from '@loyalty/contracts';
import type { z } from 'zod';
import type { Accounting, AccountView, LedgerDeps, LedgerMeta } from '../accounting.ts';
import { memberBy } from '../accounting.ts';
import { cardOfKind, cashbackConfigView, cashbackRule } from '../card-catalogue.ts';
import { cashbackFor, pointsFor } from '../domain/formulas.ts';
import { lotTerms } from '../lots/terms.ts';
import { fromCents, MAX_BALANCE, parseDecimal, toCents } from '../domain/money.ts';
import { earnByReference } from '../store/accounts.ts';
import { findReward, type Card } from '../store/cards.ts';

type Warning = QuoteWarning;

/** A quote in the card's unit (points or cents); the products' views convert it. */
interface Quote {
  memberId: number | null;
  isNew: boolean;
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

const EMPTY: AccountView = { balance: 0, pending: 0, held: 0, next_expiries: [] };

/** A business rule that would refuse the operation: the quote reports it instead of failing. */
const refusal = (code: Warning['code'], message: string): Warning => ({ code, message });

/**
 * Quotes: the same formulas, the same refund plan and the same account state as the
 * operations, read without a lock and without writing anything (no member is created, no key is
 * stored, nothing is published). A concurrent change can make the operation differ from its
 * quote; the operation itself decides under the account's lock.
 */
export function quotes(deps: LedgerDeps, books: Accounting) {
  const { pool, clock } = deps;

  /** The member the operation names; an earn may name one it would create (email or phone unknown). */
  async function memberOf(meta: LedgerMeta, d: { member_id?: number; email?: string; phone?: string }, earn: boolean) {
    try {
      return { member: (await deps.members.resolve(meta, memberBy(d))).member, isNew: false };
    } catch (err) {
      const creatable = earn && d.member_id === undefined;
      if (creatable && err instanceof AppError && err.code === 'member_not_found')
        return { member: undefined, isNew: true };
      throw err;
    }
  }

  async function earnQuote(
    card: Card,
    meta: LedgerMeta,
    d: { reference?: string },
    member: { id: number; is_active: boolean } | undefined,
    account: AccountView,
    amount: number,
  ): Promise<Omit<Quote, 'memberId' | 'isNew' | 'account'>> {
    const lot = lotTerms(card, clock.now(), 'purchase');
    const warnings: Warning[] = [];
    if (member && !member.is_active) warnings.push(refusal('member_inactive', 'The member is not active.'));
    if (d.reference !== undefined && (await earnByReference(pool, card.id, d.reference)))
      warnings.push(refusal('duplicate_reference', 'A purchase with this reference was already credited on the card.'));
    if (account.balance + account.pending + account.held + amount > MAX_BALANCE)
      warnings.push(refusal('balance_limit_exceeded', 'The credit would take the balance past its maximum.'));
    const credited = warnings.length === 0 ? amount : 0;
    return {
      wouldSucceed: warnings.length === 0,
      amount,
      newBalance: account.balance + (lot.pending ? 0 : credited),
      newPending: account.pending + (lot.pending ? credited : 0),
      availableAt: lot.availableAt.toISOString(),
      expiresAt: lot.expiresAt?.toISOString() ?? null,
      warnings,
    };
  }

  async function refundQuote(
    meta: LedgerMeta,
    k: { tenantId: number; cardId: number; memberId: number },
    d: { reference?: string },
    requested: number,
    explicit: boolean,
    unit: (n: number) => number,
  ): Promise<Omit<Quote, 'memberId' | 'isNew'>> {
    try {
      const { account, plan, fromPending } = await books.refundQuote(k, {
        requested,
        explicit,
        reference: d.reference,
      });
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
                code: 'insufficient_balance' as const,
                message: 'The balance cannot cover the whole deduction; the balance would be deducted to zero.',
                requested: unit(w.requested),
                deducted: unit(w.deducted),
                uncovered: unit(w.uncovered),
              },
            ]
          : [],
      };
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'refund_reference_mismatch') throw err;
      const account = (await books.findAccount(k)) ?? EMPTY;
      return {
        wouldSucceed: false,
        amount: 0,
        account,
        newBalance: account.balance,
        newPending: account.pending,
        availableAt: null,
        expiresAt: null,
        warnings: [refusal('refund_reference_mismatch', err.message)],
      };
    }
  }

  /** What the body's operation would do on `card` in its unit; `earned` and `requested` apply the card's formula. */
  async function quote(
    card: Card,
    meta: LedgerMeta,
    d: {
      operation: 'earn' | 'redeem' | 'refund';
      member_id?: number;
      email?: string;
      phone?: string;
      reference?: string;
    },
    figures: {
      earned: () => number;
      requested: () => { amount: number; explicit: boolean };
      redeem: () => Promise<{ amount: number; warnings: Warning[]; reward?: Quote['reward'] }>;
    },
    unit: (n: number) => number,
  ): Promise<Quote> {
    const { member, isNew } = await memberOf(meta, d, d.operation === 'earn');
    const k = member && { tenantId: meta.tenant_id, cardId: card.id, memberId: member.id };
    const account = (k && (await books.findAccount(k))) ?? EMPTY;
    const who = { memberId: member?.id ?? null, isNew };
    if (d.operation === 'earn')
      return { ...who, account, ...(await earnQuote(card, meta, d, member, account, figures.earned())) };
    if (d.operation === 'refund') {
      const r = figures.requested();
      return { ...who, ...(await refundQuote(meta, k!, d, r.amount, r.explicit, unit)) };
    }
    const redeem = await figures.redeem();
    const warnings = [...redeem.warnings];
    if (warnings.length === 0 && redeem.amount > account.balance)
      warnings.push(
        refusal(
          card.reward_system === 'points' ? 'insufficient_points' : 'insufficient_balance',
          'The spendable balance does not cover the redemption.',
        ),
      );
    const refused = warnings.some((w) => w.code !== 'pin_required');
    return {
      ...who,
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

  return {
    async points(d: z.output<typeof PointsQuoteBody>, meta: LedgerMeta) {
      const card = await cardOfKind(deps.cards, meta.tenant_id, d.card_id, 'points');
      const ratio = parseDecimal(card.points_ratio!);
      const q = await quote(
        card,
        meta,
        d,
        {
          earned: () => (d.operation === 'earn' ? pointsFor(toCents(d.purchase_amount), ratio) : 0),
          requested: () =>
            d.operation === 'refund'
              ? {
                  amount: d.points_to_deduct ?? pointsFor(toCents(d.refund_amount), ratio),
                  explicit: d.points_to_deduct !== undefined,
                }
              : { amount: 0, explicit: false },
          redeem: async () => {
            if (d.operation !== 'redeem') return { amount: 0, warnings: [] };
            const reward = await findReward(pool, meta.tenant_id, card.id, d.reward_id);
            if (!reward) throw new AppError('reward_not_found');
            return {
              amount: reward.points_cost,
              warnings: reward.active ? [] : [refusal('reward_inactive', 'The reward is not active.')],
              reward: { id: reward.id, name: reward.name },
            };
          },
        },
        (n) => n,
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
      };
    },

    async cashback(d: z.output<typeof CashbackQuoteBody>, meta: LedgerMeta) {
      const card = await cardOfKind(deps.cards, meta.tenant_id, d.card_id, 'cashback');
      const rule = cashbackRule(card);
      const q = await quote(
        card,
        meta,
        d,
        {
          earned: () => (d.operation === 'earn' ? cashbackFor(toCents(d.purchase_amount), rule) : 0),
          requested: () =>
            d.operation === 'refund'
              ? {
                  amount:
                    d.cashback_to_deduct !== undefined
                      ? toCents(d.cashback_to_deduct)
                      : cashbackFor(toCents(d.refund_amount), rule),
                  explicit: d.cashback_to_deduct !== undefined,
                }
              : { amount: 0, explicit: false },
          redeem: async () => ({
            amount: d.operation === 'redeem' ? toCents(d.amount) : 0,
            warnings: card.allows_pin_redemption
              ? [refusal('pin_required', "The redemption will ask for the member's PIN (a quote does not check it).")]
              : [],
          }),
        },
        fromCents,
      );
      return {
        ...common(q, card, d.operation),
        amount: fromCents(q.amount),
        cashback_balance: fromCents(q.account.balance),
        new_balance: fromCents(q.newBalance),
        pending_cashback: fromCents(q.account.pending),
        new_pending_cashback: fromCents(q.newPending),
        ...(d.operation === 'earn' ? { cashback_percentage: cashbackConfigView(card).cashback_percentage } : {}),
        currency: card.currency,
        warnings: q.warnings,
      };
    },
  };
}
