import {
  AppError,
  cashbackOperations,
  ledgerAdminOperations,
  ledgerOperations,
  memberPinOperations,
  operationInput,
  pointsOperations,
  type Operation,
} from '@loyalty/contracts';
import { endpoint, type Endpoint } from '@loyalty/runtime';
import type { LedgerMeta } from './accounting.ts';
import type { CardCatalogue } from './card-catalogue.ts';
import type { cashbackProduct } from './cashback.ts';
import type { MemberPins } from './member-pins.ts';
import type { pointsProduct } from './points.ts';

/**
 * An HTTP operation's handler: the gateway validated the input against the contract; the service
 * validates it again with the same schema and hands the parsed data to `fn`.
 */
function route<T>(op: Operation, fn: (d: T, meta: LedgerMeta) => Promise<unknown>): Endpoint<LedgerMeta> {
  return endpoint(operationInput(op), (d, x) => fn(d as T, x.meta));
}

/** Subject -> handler table of the ledger. Handlers stay thin: validate, delegate. */
export function ledgerEndpoints(parts: {
  cards: CardCatalogue;
  cashback: ReturnType<typeof cashbackProduct>;
  points: ReturnType<typeof pointsProduct>;
  pins: MemberPins;
}): Record<string, Endpoint<never>> {
  const { cards, cashback, points, pins } = parts;
  const c = cashbackOperations;
  const p = pointsOperations;
  const a = ledgerAdminOperations;
  const l = ledgerOperations;
  const table: Record<string, Endpoint<LedgerMeta>> = {
    [c['cashback.earn'].operation]: route(c['cashback.earn'], cashback.earn),
    [c['cashback.redeem'].operation]: route(c['cashback.redeem'], cashback.redeem),
    [c['cashback.refund'].operation]: route(c['cashback.refund'], cashback.refund),
    [c['cashback.balance'].operation]: route(c['cashback.balance'], cashback.balance),
    [c['cashback.history'].operation]: route(c['cashback.history'], cashback.history),
    [c['cashback.cards'].operation]: endpoint(undefined, (_d, x) => cards.cashbackCards(x.meta.tenant_id)),

    [p['points.earn'].operation]: route(p['points.earn'], points.earn),
    [p['points.redeem'].operation]: route(p['points.redeem'], points.redeem),
    [p['points.refund'].operation]: route(p['points.refund'], points.refund),
    [p['points.balance'].operation]: route(p['points.balance'], points.balance),
    [p['points.history'].operation]: route(p['points.history'], points.history),

    [memberPinOperations['member.pin.set'].operation]: route(
      memberPinOperations['member.pin.set'],
      async (d: { pin: string; current_pin?: string }, meta) => {
        if (meta.member_id === undefined) throw new AppError('member_token_required');
        return pins.set(meta.tenant_id, meta.member_id, d);
      },
    ),

    [l.getCard.operation]: endpoint(l.getCard.request, (d, x) => cards.cardSummary(x.meta.tenant_id, d.card_id)),
    [l.getReward.operation]: endpoint(l.getReward.request, (d, x) =>
      cards.rewardSummary(x.meta.tenant_id, d.card_id, d.reward_id),
    ),
    [l.debitPoints.operation]: endpoint(l.debitPoints.request, (d, x) => points.move('debit', d, x.meta)),
    [l.creditPoints.operation]: endpoint(l.creditPoints.request, (d, x) => points.move('credit', d, x.meta)),

    [a['admin.card.create'].operation]: route(a['admin.card.create'], cards.createCard),
    [a['admin.card.update'].operation]: route(a['admin.card.update'], cards.updateCard),
    [a['admin.card.list'].operation]: route(a['admin.card.list'], cards.listCards),
    [a['admin.card.get'].operation]: route(a['admin.card.get'], cards.getCard),
    [a['admin.reward.create'].operation]: route(a['admin.reward.create'], cards.createReward),
    [a['admin.reward.update'].operation]: route(a['admin.reward.update'], cards.updateReward),
    [a['admin.reward.list'].operation]: route(a['admin.reward.list'], cards.listRewards),
  };
  return table as Record<string, Endpoint<never>>;
}
