import {
  AppError,
  cashbackOperations,
  ledgerAdminOperations,
  ledgerOperations,
  memberDataInternalOperations,
  memberMergeInternalOperations,
  memberPinOperations,
  pointsOperations,
  quoteOperations,
  ruleAdminOperations,
  ruleOperations,
  staffOperations,
  transferOperations,
  tierAdminOperations,
  tierOperations,
  tierStaffOperations,
} from '@loyalty/contracts';
import { Endpoints } from '@loyalty/runtime';
import type { CardCatalogue } from './card-catalogue.ts';
import type { Holds } from './lots/holds.ts';
import type { MemberPins } from './member-pins.ts';
import type { LedgerMemberData } from './member-data.ts';
import type { cashbackProduct } from './products/cashback.ts';
import type { PointsProduct } from './products/points.ts';
import type { Quotes } from './products/quotes.ts';
import type { MemberEvents } from './products/member-events.ts';
import type { RuleBook } from './rule-book.ts';
import type { StaffDesk } from './staff-desk.ts';
import type { Transfers } from './transfers/transfers.ts';
import { reportEndpoints, type Reports } from './reports/index.ts';
import type { TierBook } from './tier-book.ts';
import type { MemberMerges } from './merges/member-merge.ts';

/** What the ledger's endpoints are made of (service.ts builds them). */
export interface LedgerParts {
  cards: CardCatalogue;
  cashback: ReturnType<typeof cashbackProduct>;
  points: PointsProduct;
  holds: Holds;
  quotes: Quotes;
  pins: MemberPins;
  desk: StaffDesk;
  rules: RuleBook;
  memberEvents: MemberEvents;
  transfers: Transfers;
  memberData: LedgerMemberData;
  reports: Reports;
  tiers: TierBook;
  merges: MemberMerges;
}

/** Subject -> handler table of the ledger. Handlers stay thin: validate, delegate. */
export function ledgerEndpoints(parts: LedgerParts): Endpoints {
  const { cards, cashback, points, holds, quotes, pins, desk } = parts;
  const s = staffOperations;
  const c = cashbackOperations;
  const p = pointsOperations;
  const a = ledgerAdminOperations;
  const l = ledgerOperations;
  const rules = ruleEndpoints(new Endpoints('ledger'), parts.rules, parts.memberEvents, quotes);
  const base = transferEndpoints(tierEndpoints(rules, parts.tiers), parts.transfers);
  return memberDataEndpoints(reportEndpoints(base, parts.reports), parts.memberData, parts.merges)
    .public(c['cashback.earn'], (d, x) => cashback.earn(d, x.meta))
    .public(c['cashback.redeem'], (d, x) => cashback.redeem(d, x.meta))
    .public(c['cashback.refund'], (d, x) => cashback.refund(d, x.meta))
    .public(c['cashback.balance'], (d, x) => cashback.balance(d, x.meta))
    .public(c['cashback.history'], (d, x) => cashback.history(d, x.meta))
    .public(c['cashback.cards'], (_d, x) => cards.cashbackCards(x.meta.tenant_id))
    .public(p['points.earn'], (d, x) => points.earn(d, x.meta))
    .public(p['points.redeem'], (d, x) => points.redeem(d, x.meta))
    .public(p['points.refund'], (d, x) => points.refund(d, x.meta))
    .public(p['points.balance'], (d, x) => points.balance(d, x.meta))
    .public(p['points.history'], (d, x) => points.history(d, x.meta))
    .public(quoteOperations['points.quote'], (d, x) => quotes.points(d, x.meta))
    .public(quoteOperations['cashback.quote'], (d, x) => quotes.cashback(d, x.meta))
    .public(memberPinOperations['member.pin.set'], async (d, x) => {
      if (x.meta.member_id === undefined) throw new AppError('member_token_required');
      return pins.set(x.meta.tenant_id, x.meta.member_id, d);
    })
    .internal(l.getCard, (d, x) => cards.cardSummary(x.meta.tenant_id, d.card_id))
    .internal(l.getReward, (d, x) => cards.rewardSummary(x.meta.tenant_id, d.card_id, d.reward_id))
    .internal(l.debitPoints, (d, x) => points.move('debit', d, x.meta))
    .internal(l.creditPoints, (d, x) => points.move('credit', d, x.meta))
    .internal(l.holdPoints, (d, x) => holds.place(d, x.meta))
    .internal(l.releaseHold, (d, x) => holds.release(d, x.meta))
    .internal(l.pointsBalances, (d, x) => desk.pointsBalances(d, x.meta))
    .staff(s['staff.cards.list'], (_d, x) => desk.cards(x.meta))
    .staff(s['staff.members.balances'], (d, x) => desk.balances(d, x.meta))
    .staff(s['staff.members.history'], (d, x) => desk.history(d, x.meta))
    .staff(s['staff.adjustments.create'], (d, x) => desk.adjust(d, x.meta))
    .operator(a['admin.card.create'], (d, x) => cards.createCard(d, x.meta))
    .operator(a['admin.card.update'], (d, x) => cards.updateCard(d, x.meta))
    .operator(a['admin.card.list'], (d) => cards.listCards(d))
    .operator(a['admin.card.get'], (d) => cards.getCard(d))
    .operator(a['admin.reward.create'], (d, x) => cards.createReward(d, x.meta))
    .operator(a['admin.reward.update'], (d, x) => cards.updateReward(d, x.meta))
    .operator(a['admin.reward.list'], (d) => cards.listRewards(d));
}

/** The ledger's part of members' erasures, exports and merges (identity's jobs ask for it). */
function memberDataEndpoints(endpoints: Endpoints, memberData: LedgerMemberData, merges: MemberMerges): Endpoints {
  return endpoints
    .internal(memberMergeInternalOperations.ledgerMerge, (d, x) => merges.merge(d, x.meta))
    .internal(memberDataInternalOperations.ledgerErase, (d, x) => memberData.erase(d, x.meta))
    .internal(memberDataInternalOperations.ledgerExport, (d, x) => memberData.export(d, x.meta));
}

/** The earning rules (merchant API and operator API) and member events. */
function ruleEndpoints(endpoints: Endpoints, book: RuleBook, events: MemberEvents, quotes: Quotes): Endpoints {
  const r = ruleOperations;
  const a = ruleAdminOperations;
  const s = staffOperations;
  return endpoints
    .staff(s['staff.rules.list'], (d, x) => book.list(x.meta.tenant_id, d.card_id))
    .staff(s['staff.rules.create'], (d, x) => book.create(x.meta.tenant_id, d.card_id, d, x.meta))
    .staff(s['staff.rules.activate'], (d, x) => book.activate(x.meta.tenant_id, d.card_id, d.rule_id, x.meta))
    .staff(s['staff.rules.pause'], (d, x) => book.pause(x.meta.tenant_id, d.card_id, d.rule_id, x.meta))
    .staff(s['staff.rules.preview'], (d, x) => quotes.preview(d, x.meta))
    .public(r['rules.list'], (d, x) => book.list(x.meta.tenant_id, d.card_id))
    .public(r['rules.create'], (d, x) => book.create(x.meta.tenant_id, d.card_id, d, x.meta))
    .public(r['rules.get'], (d, x) => book.get(x.meta.tenant_id, d.card_id, d.rule_id))
    .public(r['rules.update'], (d, x) => book.update(x.meta.tenant_id, d.card_id, d.rule_id, d, x.meta))
    .public(r['rules.delete'], (d, x) => book.remove(x.meta.tenant_id, d.card_id, d.rule_id, x.meta))
    .public(r['rules.activate'], (d, x) => book.activate(x.meta.tenant_id, d.card_id, d.rule_id, x.meta))
    .public(r['rules.pause'], (d, x) => book.pause(x.meta.tenant_id, d.card_id, d.rule_id, x.meta))
    .public(r['points.events'], (d, x) => events.report(d, x.meta))
    .operator(a['admin.rules.list'], (d) => book.list(d.tenant_id, d.card_id))
    .operator(a['admin.rules.create'], (d, x) => book.create(d.tenant_id, d.card_id, d, x.meta))
    .operator(a['admin.rules.get'], (d) => book.get(d.tenant_id, d.card_id, d.rule_id))
    .operator(a['admin.rules.update'], (d, x) => book.update(d.tenant_id, d.card_id, d.rule_id, d, x.meta))
    .operator(a['admin.rules.delete'], (d, x) => book.remove(d.tenant_id, d.card_id, d.rule_id, x.meta))
    .operator(a['admin.rules.activate'], (d, x) => book.activate(d.tenant_id, d.card_id, d.rule_id, x.meta))
    .operator(a['admin.rules.pause'], (d, x) => book.pause(d.tenant_id, d.card_id, d.rule_id, x.meta));
}

/** Tiers: the ladder of a card and each member's tier (merchant API and operator API). */
function tierEndpoints(endpoints: Endpoints, book: TierBook): Endpoints {
  const t = tierOperations;
  const a = tierAdminOperations;
  const s = tierStaffOperations;
  return endpoints
    .public(t['tiers.get'], (d, x) => book.settings(x.meta.tenant_id, d.card_id))
    .public(t['tiers.put'], (d, x) => book.put(x.meta.tenant_id, d.card_id, d, x.meta))
    .public(t['tiers.member'], (d, x) => book.member(x.meta, d.card_id, d.member_id))
    .operator(a['admin.tiers.get'], (d) => book.settings(d.tenant_id, d.card_id))
    .operator(a['admin.tiers.put'], (d, x) => book.put(d.tenant_id, d.card_id, d, x.meta))
    .operator(a['admin.tiers.member'], (d, x) =>
      book.member({ request_id: x.meta.request_id, tenant_id: d.tenant_id }, d.card_id, d.member_id),
    )
    .operator(a['admin.tiers.set'], (d, x) => book.setManually(x.meta, d.tenant_id, d.card_id, d.member_id, d))
    .staff(s['staff.tiers.get'], (d, x) => book.settings(x.meta.tenant_id, d.card_id))
    .staff(s['staff.tiers.put'], (d, x) => book.put(x.meta.tenant_id, d.card_id, d, x.meta))
    .staff(s['staff.tiers.member'], (d, x) => book.member(x.meta, d.card_id, d.member_id))
    .staff(s['staff.tiers.set'], (d, x) => book.setManually(x.meta, x.meta.tenant_id, d.card_id, d.member_id, d));
}

/** Points transfers between members. */
function transferEndpoints(endpoints: Endpoints, transfers: Transfers): Endpoints {
  return endpoints
    .public(transferOperations['points.transfer'], (d, x) => transfers.transfer(d, x.meta))
    .public(transferOperations['points.transfer.request_otp'], (d, x) => transfers.requestOtp(d, x.meta));
}
