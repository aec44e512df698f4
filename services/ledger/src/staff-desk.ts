import { AppError, type StaffMeta } from '@loyalty/contracts';
import { auditActor, recordAudit } from '@loyalty/runtime';
import type { Accounting, LedgerDeps, LedgerMeta } from './accounting.ts';
import type { cashbackProduct } from './products/cashback.ts';
import { balanceFields } from './domain/balance-view.ts';
import { lotTerms } from './lots/terms.ts';
import { fromCents, toCents } from './domain/money.ts';
import { journalEvents } from './events.ts';
import { lotEventFields } from './lots/views.ts';
import type { pointsProduct } from './products/points.ts';
import { findBalance } from './store/accounts.ts';
import { listCards, type Card } from './store/cards.ts';

interface Products {
  points: ReturnType<typeof pointsProduct>;
  cashback: ReturnType<typeof cashbackProduct>;
}

/**
 * The ledger's part of the staff console: the tenant's cards, a member's balances (the same
 * answers as the public balance operations, so whatever they carry, pending, held and expiring
 * amounts included, shows here too) and history, and managers' adjustments.
 */
export function staffDesk(deps: LedgerDeps, books: Accounting, products: Products) {
  const { pool } = deps;
  const events = journalEvents(deps.outbox);

  async function cardOf(meta: LedgerMeta, cardId: number): Promise<Card> {
    const card = await deps.cards.get(meta.tenant_id, cardId);
    if (!card) throw new AppError('card_not_found');
    return card;
  }

  return {
    async cards(meta: StaffMeta) {
      const cards = await listCards(pool, meta.tenant_id);
      return {
        cards: cards.map((c) => ({
          id: c.id,
          name: c.name,
          unique_identifier: c.unique_identifier,
          reward_system: c.reward_system,
          currency: c.currency,
        })),
      };
    },

    async balances(d: { member_id: number }, meta: StaffMeta) {
      await deps.members.mustExist(meta, d.member_id);
      const cards = await listCards(pool, meta.tenant_id);
      const balances = await Promise.all(
        cards.map(async (card) => {
          const q = { card_id: card.id, member_id: d.member_id };
          const answer =
            card.reward_system === 'points'
              ? balanceFields(await products.points.balance(q, meta))
              : balanceFields(await products.cashback.balance(q, meta));
          return {
            card_id: card.id,
            card_name: card.name,
            reward_system: card.reward_system,
            currency: card.currency,
            ...answer,
          };
        }),
      );
      return { member_id: d.member_id, balances };
    },

    async history(d: { member_id: number; card_id: number; limit: number; offset: number }, meta: StaffMeta) {
      const card = await cardOf(meta, d.card_id);
      const { entries, total } = await books.historyPage(meta, card.id, d.member_id, d.limit, d.offset);
      const points = card.reward_system === 'points';
      return {
        card_id: card.id,
        member_id: d.member_id,
        reward_system: card.reward_system,
        transactions: entries.map((e) => ({
          id: e.id,
          event: e.event,
          points: points ? e.amount : 0,
          amount: points ? 0 : fromCents(e.amount),
          created_at: e.created_at.toISOString(),
        })),
        pagination: { limit: d.limit, offset: d.offset, total, has_more: d.offset + entries.length < total },
      };
    },

    /**
     * A manager's credit or debit with a reason: one posting (journal event `staff_adjustment`)
     * under the request's Idempotency-Key, with its audit event in the same transaction. A
     * deduction the spendable balance does not cover is refused (422) and writes nothing.
     */
    async adjust(
      d: {
        card_id: number;
        member_id: number;
        direction: 'add' | 'deduct';
        points?: number;
        amount?: number;
        reason: string;
      },
      meta: StaffMeta,
    ) {
      if (!meta.idempotency_key) throw new AppError('idempotency_key_required');
      const card = await cardOf(meta, d.card_id);
      const points = card.reward_system === 'points';
      if (points ? d.points === undefined : d.amount === undefined) {
        const field = points ? 'points' : 'amount';
        throw new AppError('validation_error', `Invalid request: ${field}.`, {
          fields: [{ field, message: `is required on a ${card.reward_system} card` }],
        });
      }
      await deps.members.mustExist(meta, d.member_id);
      const units = points ? d.points! : toCents(d.amount!);
      const sign = d.direction === 'add' ? 1 : -1;
      const moved: Record<string, number> = points ? { points: sign * units } : { amount: fromCents(sign * units) };
      const k = { tenantId: meta.tenant_id, cardId: card.id, memberId: d.member_id };
      return books.posting(
        meta,
        { operation: 'staff.adjustments.create', data: d, source: 'http' },
        (at) => {
          // A credit is a lot on the card's terms (spendable at once: no return window); a debit
          // takes the spendable lots soonest-expiring first.
          const lot = d.direction === 'add' ? lotTerms(card, at, 'other') : undefined;
          return {
            direction: d.direction === 'add' ? 'credit' : 'debit',
            k,
            m: {
              event: 'staff_adjustment',
              amount: units,
              metadata: { reason: d.reason, staff_id: meta.staff.id },
              at,
              lot,
            },
            e: events.posting(points ? 'points' : 'cents', {
              tenantId: meta.tenant_id,
              event: 'staff_adjustment',
              at,
              data: {
                member_id: d.member_id,
                card_id: card.id,
                ...moved,
                reason: d.reason,
                ...(lot ? lotEventFields(lot) : {}),
              },
            }),
          };
        },
        async (p, db) => {
          if (!p) {
            const balance = (await findBalance(db, card.id, d.member_id)) ?? 0;
            throw points
              ? new AppError('insufficient_points', undefined, { points_balance: balance, points_required: units })
              : new AppError('insufficient_balance', undefined, {
                  cashback_balance: fromCents(balance),
                  amount_required: fromCents(units),
                });
          }
          await recordAudit(
            deps.outbox,
            db,
            meta.tenant_id,
            {
              actor: auditActor(meta),
              action: 'balance.adjusted',
              target: { member_id: d.member_id, card_id: card.id, transaction_id: p.entry.id },
              amounts: moved,
              details: { reason: d.reason, direction: d.direction },
              request_id: meta.request_id,
            },
            p.entry.created_at,
          );
          const value = (n: number) => (points ? n : fromCents(n));
          return {
            adjustment: {
              transaction_id: p.entry.id,
              card_id: card.id,
              member_id: d.member_id,
              direction: d.direction,
              ...(points ? { points: units } : { amount: fromCents(units) }),
              previous_balance: value(p.previous),
              new_balance: value(p.balance),
              reason: d.reason,
              created_at: p.entry.created_at.toISOString(),
            },
          };
        },
      );
    },

    /** internal.points.balances: the spendable points of each account asked for (one that cannot be read is left out). */
    async pointsBalances(d: { accounts: { card_id: number; member_id: number }[] }, meta: LedgerMeta) {
      const answers = await Promise.allSettled(d.accounts.map((a) => products.points.balance(a, meta)));
      return {
        balances: answers.flatMap((r) =>
          r.status === 'fulfilled'
            ? [{ card_id: r.value.card_id, member_id: r.value.member_id, points_balance: r.value.points_balance }]
            : [],
        ),
      };
    },
  };
}
