import { AppError, ruleOperations, type OperationOutput } from '@loyalty/contracts';
import type { PoolClient } from '@loyalty/runtime';
import { bonusTierMove, tierForRules } from '../tiers/moves.ts';
import type { Accounting, LedgerDeps, LedgerMeta } from '../accounting.ts';
import { memberBy } from '../accounting.ts';
import type { RuledCard } from '../card-cache.ts';
import { cardOfKind } from '../card-catalogue.ts';
import { evaluateRules, type Evaluation } from '../domain/rules/index.ts';
import type { JournalEvent } from '../domain/journal.ts';
import { journalEvents, type JournalEvents } from '../events.ts';
import { lotTerms } from '../lots/terms.ts';
import { lotEventFields } from '../lots/views.ts';
import { findMemberEvent, insertMemberEvent } from '../store/rules.ts';
import { appliedEventView, appliedView, journalRulesOf, recordRuleEffects, usageOf, usageState } from './rule-earn.ts';

type Answer = OperationOutput<(typeof ruleOperations)['points.events']>;

/** The journal label of points an event rule gave. */
const EVENT_BONUS: JournalEvent = 'event_bonus';

interface EventReport {
  card_id: number;
  member_id?: number;
  email?: string;
  phone?: string;
  event: string;
  reference: string;
}

/** The first answer of a reference, if this member's event made it; another member's or event's is a conflict. */
function replay(stored: unknown, memberId: number, d: EventReport): Answer | undefined {
  if (stored === undefined) return undefined;
  const first = ruleOperations['points.events'].response.parse(stored);
  if (first.member_id !== memberId || first.event !== d.event)
    throw new AppError('duplicate_reference', 'This reference was already reported for another member or event.');
  return { ...first, replayed: true };
}

/**
 * Member events (POST /api/v1/loyalty/points/events): the card's active `event` rules for the
 * named event give points, with the same conditions, combination, caps and budgets as purchase
 * rules, in one transaction under the member's account lock. A reference is reported once: the
 * same reference again answers the first answer (`replayed: true`), so a retry never pays twice.
 */
export class MemberEvents {
  private readonly events: JournalEvents;

  constructor(
    private readonly deps: LedgerDeps,
    private readonly books: Accounting,
  ) {
    this.events = journalEvents(deps.outbox);
  }

  async report(d: EventReport, meta: LedgerMeta): Promise<Answer> {
    const card = await cardOfKind(this.deps.cards, meta.tenant_id, d.card_id, 'points');
    const { member } = await this.deps.members.resolve(meta, memberBy(d));
    const first = replay(await findMemberEvent(this.deps.pool, card.id, d.reference), member.id, d);
    if (first) return first;
    if (!member.is_active) throw new AppError('member_inactive');
    const k = { tenantId: meta.tenant_id, cardId: card.id, memberId: member.id };
    const answer = await this.books.inTransaction(
      meta,
      { operation: 'points.events', data: d, source: 'http' },
      async (db) => {
        const at = this.deps.clock.now();
        const amounts = await this.books.settleLocked(db, k, at, true);
        const again = replay(await findMemberEvent(db, card.id, d.reference), member.id, d);
        if (again) return again;
        const evaluation = await this.evaluate(db, card, member.id, d.event, at);
        const result = await this.credit(db, card, k, d, evaluation, at, amounts?.balance ?? 0);
        // Another member's report of the same reference committed first: that one stands.
        if (!(await insertMemberEvent(db, { ...k, ...d, cardId: card.id, answer: result, at })))
          throw new AppError('duplicate_reference', 'This reference was already reported.');
        return result;
      },
    );
    return answer;
  }

  private async evaluate(db: PoolClient, card: RuledCard, memberId: number, event: string, at: Date) {
    const rules = card.rules.filter((r) => r.kind === 'event' && r.event === event);
    const state = await usageState(db, rules, memberId, at, card.time_zone, true);
    const tier = await tierForRules(db, card, rules, memberId);
    return {
      rules,
      evaluation: evaluateRules(rules, {
        unit: 'points',
        at,
        timeZone: card.time_zone,
        tier,
        occasion: { kind: 'event', name: event },
        base: 0,
        baseOf: () => 0,
        usage: usageOf(state, at, card.time_zone),
      }),
    };
  }

  private async credit(
    db: PoolClient,
    card: RuledCard,
    k: { tenantId: number; cardId: number; memberId: number },
    d: EventReport,
    e: { rules: RuledCard['rules']; evaluation: Evaluation },
    at: Date,
    balance: number,
  ): Promise<Answer> {
    const base = { card_id: card.id, member_id: k.memberId, event: d.event, reference: d.reference, replayed: false };
    const total = e.evaluation.total;
    if (total <= 0) return { ...base, points_earned: 0, transaction_id: null, new_balance: balance, rules_applied: [] };
    const lot = lotTerms(card, at, 'other');
    const data = {
      member_id: k.memberId,
      card_id: card.id,
      points: total,
      member_event: d.event,
      reference: d.reference,
      rules_applied: appliedEventView(card, e.evaluation.applied),
      ...lotEventFields(lot),
    };
    const p = {
      account: k,
      movement: {
        event: EVENT_BONUS,
        amount: total,
        reference: d.reference,
        at,
        lot,
        rules: journalRulesOf(e.evaluation),
        tier: bonusTierMove(this.deps.outbox, card, at, total),
      },
      event: this.events.posting('points', { tenantId: k.tenantId, event: EVENT_BONUS, at, data }),
    };
    const change = await this.books.credit(db, p);
    await recordRuleEffects(db, this.deps.outbox, {
      card,
      memberId: k.memberId,
      journalId: change.entry.id,
      evaluation: e.evaluation,
      rules: e.rules,
      at,
    });
    return {
      ...base,
      points_earned: total,
      transaction_id: change.entry.id,
      new_balance: change.balance,
      rules_applied: appliedView(card, e.evaluation.applied),
    };
  }
}
