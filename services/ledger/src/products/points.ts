import { AppError } from '@loyalty/contracts';
import type { Accounting, LedgerDeps, LedgerMeta } from '../accounting.ts';
import { memberBy } from '../accounting.ts';
import { cardOfKind } from '../card-catalogue.ts';
import { pointsFor } from '../domain/formulas.ts';
import type { JournalEvent } from '../domain/journal.ts';
import { fromCents, parseDecimal, toCents } from '../domain/money.ts';
import { journalEvents } from '../events.ts';
import { findBalance } from '../store/accounts.ts';
import { lotTerms, type LotTerms } from '../lots/terms.ts';
import { creditTerms, lotEventFields } from '../lots/views.ts';
import type { Holds } from '../lots/holds.ts';
import { findReward } from '../store/cards.ts';

type MemberRef = { member_id?: number; email?: string; phone?: string };

/**
 * The points operations of the interface: points earn, redeem, refund, balance and history; and the points
 * movements other services ask for (claim approval debits, referral bonus credits).
 */
export function pointsProduct(deps: LedgerDeps, books: Accounting, holds: Holds) {
  const { pool, clock } = deps;
  const events = journalEvents(deps.outbox);
  const pointsCard = (meta: LedgerMeta, cardId: number) => cardOfKind(deps.cards, meta.tenant_id, cardId, 'points');

  function insufficient(balance: number, required: number): AppError {
    return new AppError('insufficient_points', undefined, { points_balance: balance, points_required: required });
  }

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
      const card = await pointsCard(meta, d.card_id);
      const { member, created } = await deps.members.resolve(meta, memberBy(d), { name: d.member_name });
      if (!member.is_active) throw new AppError('member_inactive');
      const purchaseCents = toCents(d.purchase_amount);
      const points = pointsFor(purchaseCents, parseDecimal(card.points_ratio!));
      const k = { tenantId: meta.tenant_id, cardId: card.id, memberId: member.id };
      const earnReference = d.reference === undefined ? undefined : { cardId: card.id, reference: d.reference };
      let lot: LotTerms | undefined;
      return books.posting(
        meta,
        { operation: 'points.earn', data: d, source: 'http', earnReference },
        (at) => {
          lot = lotTerms(card, at, 'purchase');
          return {
            direction: 'credit',
            k,
            m: {
              event: 'staff_added_points',
              amount: points,
              purchaseCents,
              reference: d.reference,
              metadata: d.metadata,
              at,
              lot,
            },
            // Identity mails the member on this event (once, even if it is delivered again).
            e: events.posting('points', {
              tenantId: meta.tenant_id,
              event: 'staff_added_points',
              at,
              data: {
                member_id: member.id,
                card_id: card.id,
                points,
                purchase_amount: fromCents(purchaseCents),
                reference: d.reference ?? null,
                ...lotEventFields(lot),
              },
            }),
          };
        },
        (p) => ({
          transaction_id: p!.entry.id,
          points_earned: points,
          new_balance: p!.balance,
          member_id: member.id,
          card_id: card.id,
          is_new_member: created,
          notification_sent: member.has_email ? 'points_earned' : null,
          reference: d.reference ?? null,
          earned_at: p!.entry.created_at.toISOString(),
          ...(lot!.pending ? { pending_points: points } : {}),
          ...creditTerms(lot!),
        }),
      );
    },

    async redeem(d: { card_id: number; reward_id: number; reference?: string }, meta: LedgerMeta) {
      const memberId = meta.member_id;
      if (memberId === undefined) throw new AppError('member_token_required');
      const card = await pointsCard(meta, d.card_id);
      const reward = await findReward(pool, meta.tenant_id, card.id, d.reward_id);
      if (!reward) throw new AppError('reward_not_found');
      if (!reward.active) throw new AppError('reward_inactive');
      const k = { tenantId: meta.tenant_id, cardId: card.id, memberId };
      return books.posting(
        meta,
        { operation: 'points.redeem', data: { ...d, member_id: memberId }, source: 'http' },
        (at) => ({
          direction: 'debit',
          k,
          m: {
            event: 'staff_redeemed_reward',
            amount: reward.points_cost,
            reference: d.reference,
            rewardId: reward.id,
            at,
          },
          e: events.posting('points', {
            tenantId: meta.tenant_id,
            event: 'staff_redeemed_reward',
            at,
            data: {
              member_id: memberId,
              card_id: card.id,
              points: reward.points_cost,
              reward_id: reward.id,
              reward_name: reward.name,
              reference: d.reference ?? null,
            },
          }),
        }),
        async (p, db) => {
          if (!p) throw insufficient((await findBalance(db, card.id, memberId)) ?? 0, reward.points_cost);
          return {
            transaction_id: p.entry.id,
            reward_id: reward.id,
            reward_name: reward.name,
            points_redeemed: reward.points_cost,
            new_balance: p.balance,
            member_id: memberId,
            card_id: card.id,
            reference: d.reference ?? null,
            redeemed_at: p.entry.created_at.toISOString(),
          };
        },
      );
    },

    async refund(
      d: MemberRef & { card_id: number; refund_amount: number; points_to_deduct?: number; reference?: string },
      meta: LedgerMeta,
    ) {
      const card = await pointsCard(meta, d.card_id);
      const memberId = await books.refundMember(meta, card.id, d);
      const refundCents = toCents(d.refund_amount);
      const requested = d.points_to_deduct ?? pointsFor(refundCents, parseDecimal(card.points_ratio!));
      const k = { tenantId: meta.tenant_id, cardId: card.id, memberId };
      return books.inTransaction(meta, { operation: 'points.refund', data: d, source: 'http' }, async (db) => {
        const at = clock.now();
        const r = await books.refund(db, k, {
          event: 'points_refunded',
          requested,
          explicit: d.points_to_deduct !== undefined,
          refundCents,
          reference: d.reference,
          at,
        });
        const warning = r.plan.warning && {
          code: 'insufficient_balance' as const,
          message: 'The balance could not cover the whole deduction; the balance was deducted to zero.',
          ...r.plan.warning,
        };
        const fromPending = r.fromPending;
        await events.record(db, {
          tenantId: meta.tenant_id,
          event: 'points_refunded',
          at,
          data: {
            member_id: memberId,
            card_id: card.id,
            transaction_id: r.entry.id,
            points: r.plan.deducted,
            pending_points: fromPending,
            refund_amount: fromCents(refundCents),
            previous_balance: r.previous,
            new_balance: r.balance,
            uncovered: warning ? warning.uncovered : 0,
            reference: d.reference ?? null,
          },
        });
        return {
          transaction_id: r.entry.id,
          points_deducted: r.plan.deducted,
          ...(fromPending > 0 ? { pending_points_deducted: fromPending } : {}),
          refund_amount: fromCents(refundCents),
          previous_balance: r.previous,
          new_balance: r.balance,
          member_id: memberId,
          card_id: card.id,
          reference: d.reference ?? null,
          balance_warning: warning,
          refunded_at: at.toISOString(),
        };
      });
    },

    async balance(d: { card_id: number; member_id: number }, meta: LedgerMeta) {
      const card = await pointsCard(meta, d.card_id);
      const account = await books.accountOf(meta, card.id, d.member_id);
      return {
        card_id: card.id,
        member_id: d.member_id,
        points_balance: account.balance,
        pending_points: account.pending,
        held_points: account.held,
        next_expiries: account.next_expiries.map((x) => ({ points: x.amount, expires_at: x.expires_at.toISOString() })),
        reward_system: 'points' as const,
        queried_at: clock.now().toISOString(),
      };
    },

    async history(d: { card_id: number; member_id: number; limit: number; offset: number }, meta: LedgerMeta) {
      const card = await pointsCard(meta, d.card_id);
      const { entries, total } = await books.historyPage(meta, card.id, d.member_id, d.limit, d.offset);
      return {
        card_id: card.id,
        member_id: d.member_id,
        transactions: entries.map((e) => ({
          id: e.id,
          points: e.amount,
          event: e.event,
          created_at: e.created_at.toISOString(),
        })),
        pagination: { limit: d.limit, offset: d.offset, total, has_more: d.offset + entries.length < total },
      };
    },

    /**
     * internal.points.debit / internal.points.credit: a saga step of another service, always under
     * its deterministic key (`claim:<id>`, `referral:<id>:referrer`), so a retry replays the first
     * reply. A refused debit writes nothing, so the same key can succeed later.
     */
    async move(
      direction: 'debit' | 'credit',
      d: {
        card_id: number;
        member_id: number;
        points: number;
        event: JournalEvent;
        reference?: string;
        metadata?: Record<string, unknown>;
      },
      meta: LedgerMeta,
    ) {
      if (!meta.idempotency_key) {
        throw new AppError('validation_error', 'Points movements need meta.idempotency_key.', {
          fields: [{ field: 'idempotency_key', message: 'is required' }],
        });
      }
      const card = await pointsCard(meta, d.card_id);
      const k = { tenantId: meta.tenant_id, cardId: card.id, memberId: d.member_id };
      return books.posting(
        meta,
        {
          operation: `internal.points.${direction}`,
          data: d,
          source: 'service',
          // A debit under the key of a hold (a claim's) captures the hold instead (holds.ts).
          instead: direction === 'debit' ? (db, at) => holds.captureIfHeld(db, meta, k, d, at) : undefined,
        },
        (at) => {
          // A credit (a referral bonus) is a lot on the card's terms; it waits for no return window.
          const lot = direction === 'credit' ? lotTerms(card, at, 'other') : undefined;
          return {
            direction,
            k,
            m: { event: d.event, amount: d.points, reference: d.reference, metadata: d.metadata, at, lot },
            e: events.posting('points', {
              tenantId: meta.tenant_id,
              event: d.event,
              at,
              data: {
                member_id: d.member_id,
                card_id: card.id,
                points: direction === 'credit' ? d.points : -d.points,
                reference: d.reference ?? null,
                ...(d.metadata ? { metadata: d.metadata } : {}),
                ...(lot ? lotEventFields(lot) : {}),
              },
            }),
          };
        },
        async (p, db) => {
          if (!p) throw insufficient((await findBalance(db, card.id, d.member_id)) ?? 0, d.points);
          return { transaction_id: p.entry.id, points: d.points, previous_balance: p.previous, new_balance: p.balance };
        },
      );
    },
  };
}
