import { AppError } from '@loyalty/contracts';
import type { Accounting, LedgerDeps, LedgerMeta } from '../accounting.ts';
import { memberBy } from '../accounting.ts';
import { cardOfKind, cashbackConfigView, cashbackRule } from '../card-catalogue.ts';
import { cashbackFor } from '../domain/formulas.ts';
import { cashbackEntryType } from '../domain/journal.ts';
import { fromCents, toCents } from '../domain/money.ts';
import { journalEvents } from '../events.ts';
import { findBalance } from '../store/accounts.ts';
import { lotTerms, type LotTerms } from '../lots/terms.ts';
import { creditTerms, lotEventFields } from '../lots/views.ts';

type MemberRef = { member_id?: number; email?: string; phone?: string };

/** The cashback operations of the interface: cashback earn, redeem, balance, history and refund. Money is cents inside. */
export function cashbackProduct(deps: LedgerDeps, books: Accounting) {
  const { clock } = deps;
  const events = journalEvents(deps.outbox);
  const cashbackCard = (meta: LedgerMeta, cardId: number) => cardOfKind(deps.cards, meta.tenant_id, cardId, 'cashback');

  return {
    async earn(
      d: MemberRef & {
        card_id: number;
        member_name?: string;
        purchase_amount: number;
        reference?: string;
        metadata?: Record<string, unknown>;
      },
      meta: LedgerMeta,
    ) {
      const card = await cashbackCard(meta, d.card_id);
      const { member, created } = await deps.members.resolve(meta, memberBy(d), { name: d.member_name });
      if (!member.is_active) throw new AppError('member_inactive');
      const purchaseCents = toCents(d.purchase_amount);
      const earned = cashbackFor(purchaseCents, cashbackRule(card));
      const percentage = cashbackConfigView(card).cashback_percentage;
      const k = { tenantId: meta.tenant_id, cardId: card.id, memberId: member.id };
      const earnReference = d.reference === undefined ? undefined : { cardId: card.id, reference: d.reference };
      let lot: LotTerms | undefined;
      return books.posting(
        meta,
        { operation: 'cashback.earn', data: d, source: 'http', earnReference },
        (at) => {
          lot = lotTerms(card, at, 'purchase');
          return {
            direction: 'credit',
            k,
            m: {
              event: 'cashback_earned',
              amount: earned,
              purchaseCents,
              reference: d.reference,
              metadata: d.metadata,
              at,
              lot,
            },
            e: events.posting('cents', {
              tenantId: meta.tenant_id,
              event: 'cashback_earned',
              at,
              data: {
                member_id: member.id,
                card_id: card.id,
                amount: fromCents(earned),
                purchase_amount: fromCents(purchaseCents),
                cashback_percentage: percentage,
                currency: card.currency,
                reference: d.reference ?? null,
                ...lotEventFields(lot),
              },
            }),
          };
        },
        (p) => ({
          transaction_id: p!.entry.id,
          purchase_amount: fromCents(purchaseCents),
          cashback_percentage: percentage,
          cashback_earned: fromCents(earned),
          new_balance: fromCents(p!.balance),
          member_id: member.id,
          card_id: card.id,
          is_new_member: created,
          reference: d.reference ?? null,
          earned_at: p!.entry.created_at.toISOString(),
          ...(lot!.pending ? { pending_cashback: fromCents(earned) } : {}),
          ...creditTerms(lot!),
        }),
      );
    },

    async redeem(d: { card_id: number; amount: number; pin?: string; reference?: string }, meta: LedgerMeta) {
      const memberId = meta.member_id;
      if (memberId === undefined) throw new AppError('member_token_required');
      const card = await cashbackCard(meta, d.card_id);
      if (card.allows_pin_redemption) await deps.pins.checkForRedemption(meta.tenant_id, memberId, d.pin);
      const cents = toCents(d.amount);
      const k = { tenantId: meta.tenant_id, cardId: card.id, memberId };
      // The PIN is a credential, not a parameter: it never goes into the idempotency record.
      const { pin: _pin, ...parameters } = d;
      return books.posting(
        meta,
        { operation: 'cashback.redeem', data: { ...parameters, member_id: memberId }, source: 'http' },
        (at) => ({
          direction: 'debit',
          k,
          m: { event: 'cashback_redeemed', amount: cents, reference: d.reference, at },
          e: events.posting('cents', {
            tenantId: meta.tenant_id,
            event: 'cashback_redeemed',
            at,
            data: {
              member_id: memberId,
              card_id: card.id,
              amount: fromCents(cents),
              currency: card.currency,
              reference: d.reference ?? null,
            },
          }),
        }),
        async (p, db) => {
          if (!p) {
            const balance = (await findBalance(db, card.id, memberId)) ?? 0;
            throw new AppError('insufficient_balance', undefined, {
              cashback_balance: fromCents(balance),
              requested: fromCents(cents),
            });
          }
          return {
            transaction_id: p.entry.id,
            amount_redeemed: fromCents(cents),
            new_balance: fromCents(p.balance),
            member_id: memberId,
            card_id: card.id,
            reference: d.reference ?? null,
            redeemed_at: p.entry.created_at.toISOString(),
          };
        },
      );
    },

    async refund(
      d: MemberRef & { card_id: number; refund_amount: number; cashback_to_deduct?: number; reference?: string },
      meta: LedgerMeta,
    ) {
      const card = await cashbackCard(meta, d.card_id);
      const memberId = await books.refundMember(meta, card.id, d);
      const refundCents = toCents(d.refund_amount);
      const requested =
        d.cashback_to_deduct !== undefined
          ? toCents(d.cashback_to_deduct)
          : cashbackFor(refundCents, cashbackRule(card));
      const k = { tenantId: meta.tenant_id, cardId: card.id, memberId };
      return books.inTransaction(meta, { operation: 'cashback.refund', data: d, source: 'http' }, async (db) => {
        const at = clock.now();
        const r = await books.refund(db, k, {
          event: 'cashback_refunded',
          requested,
          explicit: d.cashback_to_deduct !== undefined,
          refundCents,
          reference: d.reference,
          at,
        });
        const w = r.plan.warning;
        const warning = w && {
          code: 'insufficient_balance' as const,
          message: 'The balance could not cover the whole deduction; the balance was deducted to zero.',
          requested: fromCents(w.requested),
          deducted: fromCents(w.deducted),
          uncovered: fromCents(w.uncovered),
        };
        await events.record(db, {
          tenantId: meta.tenant_id,
          event: 'cashback_refunded',
          at,
          data: {
            member_id: memberId,
            card_id: card.id,
            transaction_id: r.entry.id,
            amount: fromCents(r.plan.deducted),
            pending_amount: fromCents(r.fromPending),
            refund_amount: fromCents(refundCents),
            previous_balance: fromCents(r.previous),
            new_balance: fromCents(r.balance),
            uncovered: warning ? warning.uncovered : 0,
            currency: card.currency,
            reference: d.reference ?? null,
          },
        });
        return {
          transaction_id: r.entry.id,
          cashback_deducted: fromCents(r.plan.deducted),
          ...(r.fromPending > 0 ? { pending_cashback_deducted: fromCents(r.fromPending) } : {}),
          refund_amount: fromCents(refundCents),
          previous_balance: fromCents(r.previous),
          new_balance: fromCents(r.balance),
          currency: card.currency,
          member_id: memberId,
          card_id: card.id,
          reference: d.reference ?? null,
          balance_warning: warning,
          refunded_at: at.toISOString(),
        };
      });
    },

    async balance(d: { card_id: number; member_id: number }, meta: LedgerMeta) {
      const card = await cashbackCard(meta, d.card_id);
      const account = await books.accountOf(meta, card.id, d.member_id);
      return {
        card_id: card.id,
        member_id: d.member_id,
        cashback_balance: fromCents(account.balance),
        pending_cashback: fromCents(account.pending),
        held_cashback: fromCents(account.held),
        next_expiries: account.next_expiries.map((x) => ({
          amount: fromCents(x.amount),
          expires_at: x.expires_at.toISOString(),
        })),
        cashback_percentage: cashbackConfigView(card).cashback_percentage,
        currency: card.currency,
        reward_system: 'cashback' as const,
        queried_at: clock.now().toISOString(),
      };
    },

    async history(d: { card_id: number; member_id: number; limit: number; offset: number }, meta: LedgerMeta) {
      const card = await cashbackCard(meta, d.card_id);
      const { entries, total } = await books.historyPage(meta, card.id, d.member_id, d.limit, d.offset);
      return {
        card_id: card.id,
        member_id: d.member_id,
        transactions: entries.map((e) => ({
          id: e.id,
          type: cashbackEntryType(e.event, e.amount),
          amount: fromCents(e.amount),
          points: 0 as const,
          event: e.event,
          created_at: e.created_at.toISOString(),
        })),
        pagination: { limit: d.limit, offset: d.offset, total, has_more: d.offset + entries.length < total },
      };
    },
  };
}
