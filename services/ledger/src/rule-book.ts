import {
  AppError,
  type AdminMeta,
  type Meta,
  type OperationOutput,
  type ruleOperations,
  type StaffMeta,
} from '@loyalty/contracts';
import {
  auditActor,
  recordAudit,
  withTransaction,
  type Clock,
  type Outbox,
  type Pool,
  type PoolClient,
  type ReplayStore,
} from '@loyalty/runtime';
import { fromCents } from './domain/money.ts';
import { checkedRule, type RuleDefinition, type RuleDraft, type RuleStatus } from './domain/rules/index.ts';
import { findCard, type Card } from './store/cards.ts';
import {
  deleteDraft,
  findRule,
  insertRule,
  listRules,
  lockCardCountActive,
  reviseRule,
  ruleVersions,
  setRuleStatus,
  type RuleRow,
} from './store/rules.ts';

/** At most this many active rules on one card. */
export const MAX_ACTIVE_RULES = 100;

type RuleRecord = OperationOutput<(typeof ruleOperations)['rules.get']>['rule'];
type Who = Meta | AdminMeta | StaffMeta;

/** The rule a create writes (the contract filled in the defaults). */
export type RuleInput = RuleDraft & { status: 'draft' | 'active' };

/** A change of a rule: absent keeps, null removes. */
export interface RulePatch {
  name?: string;
  kind?: string;
  priority?: number;
  combination?: string;
  group?: string;
  replaces_base?: boolean;
  factor?: number | null;
  points?: number | null;
  percentage?: number | null;
  amount?: number | null;
  event?: string | null;
  conditions?: RuleDefinition['conditions'];
  cap?: RuleDraft['cap'];
  budget?: number | null;
}

const VALUE_KEYS = ['factor', 'points', 'percentage', 'amount', 'event'] as const;
const PLAIN_KEYS = [
  'name',
  'kind',
  'priority',
  'combination',
  'group',
  'replaces_base',
  'conditions',
  'cap',
  'budget',
] as const;

/** The draft as it is stored: the rule's own fields only, value keys only when they have a value. */
function draftOf(d: RuleDraft): RuleDraft {
  const out: RuleDraft = {
    name: d.name,
    kind: d.kind,
    priority: d.priority,
    combination: d.combination,
    group: d.group,
    replaces_base: d.replaces_base,
    conditions: d.conditions,
    cap: d.cap,
    budget: d.budget,
  };
  for (const k of VALUE_KEYS) {
    const v = d[k];
    if (v !== undefined) Object.assign(out, { [k]: v });
  }
  return out;
}

function merged(current: RuleDefinition, p: RulePatch): RuleDraft {
  const next: RuleDraft = { ...current };
  for (const k of PLAIN_KEYS) if (p[k] !== undefined) Object.assign(next, { [k]: p[k] });
  for (const k of VALUE_KEYS) {
    const v = p[k];
    if (v === null) delete next[k];
    else if (v !== undefined) Object.assign(next, { [k]: v });
  }
  return draftOf(next);
}

/** The definition, or 422 invalid_rule naming every field that cannot be, before anything is stored. */
function validated(d: RuleDraft, card: Card): RuleDefinition {
  const checked = checkedRule(draftOf(d), card.reward_system);
  if (!('problems' in checked)) return checked;
  const problems = checked.problems;
  throw new AppError(
    'invalid_rule',
    `The rule is not valid: ${problems.map((p) => `${p.field} ${p.message}`).join('; ')}.`,
    { fields: problems },
  );
}

function ruleRecord(r: RuleRow, card: Card): RuleRecord {
  const d = r.definition;
  return {
    id: r.id,
    card_id: r.card_id,
    status: r.status,
    version: r.version,
    name: d.name,
    kind: d.kind,
    priority: d.priority,
    combination: d.combination,
    group: d.group,
    replaces_base: d.replaces_base,
    ...(d.factor !== undefined ? { factor: d.factor } : {}),
    ...(d.points !== undefined ? { points: d.points } : {}),
    ...(d.percentage !== undefined ? { percentage: d.percentage } : {}),
    ...(d.amount !== undefined ? { amount: d.amount } : {}),
    ...(d.event !== undefined ? { event: d.event } : {}),
    conditions: d.conditions,
    cap: d.cap,
    budget: d.budget,
    budget_used: card.reward_system === 'points' ? r.budget_used : fromCents(r.budget_used),
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

/** The Idempotency-Key record of a create: an app's and a staff user's keys are kept apart; the operator has none. */
function replayKey(who: Who): string | undefined {
  if ('operator' in who || who.idempotency_key === undefined) return undefined;
  return `${'staff' in who ? 'staff' : 'http'}:${who.idempotency_key}`;
}

/** Rules run by priority, highest first, then by id: the list shows them in that order. */
const runOrder = (a: RuleRow, b: RuleRow) => b.definition.priority - a.definition.priority || a.id - b.id;

/**
 * The earning rules of cards: create, read, change (a new version once a rule has been active),
 * activate, pause, end. Every change is audited in its transaction, and a change that touches
 * what earns read (an active rule) is a card change: every replica forgets the card.
 */
export class RuleBook {
  constructor(
    private readonly deps: { pool: Pool; outbox: Outbox; clock: Clock; replays: ReplayStore },
    /** Told of every card whose active rules changed (every replica forgets its cached copy). */
    private readonly changed: (cardId: number) => void,
  ) {}

  async list(tenantId: number, cardId: number) {
    const card = await this.cardOrFail(tenantId, cardId);
    const rules = (await listRules(this.deps.pool, tenantId, cardId)).sort(runOrder).map((r) => ruleRecord(r, card));
    return { card_id: card.id, time_zone: card.time_zone, rules, total: rules.length };
  }

  async get(tenantId: number, cardId: number, ruleId: number) {
    const card = await this.cardOrFail(tenantId, cardId);
    const rule = await this.ruleOrFail(this.deps.pool, card, ruleId);
    const versions = await ruleVersions(this.deps.pool, rule.id);
    return {
      rule: ruleRecord(rule, card),
      versions: versions.map((v) => ({ version: v.version, created_at: v.created_at.toISOString() })),
    };
  }

  async create(tenantId: number, cardId: number, input: RuleInput, who: Who) {
    const card = await this.cardOrFail(tenantId, cardId);
    const { status, ...fields } = input;
    const definition = validated(fields, card);
    const answer = await this.deps.replays.run(
      { tenantId, key: replayKey(who), operation: 'rules.create', data: { card_id: cardId, ...input } },
      async (db) => {
        if (status === 'active') await this.roomForOneMore(db, card.id);
        const at = this.deps.clock.now();
        const rule = await insertRule(db, { tenantId, cardId, status, definition, at });
        await this.audit(db, who, tenantId, 'rule.created', rule, { status, definition });
        return { rule: ruleRecord(rule, card) };
      },
    );
    if (answer.rule.status === 'active') this.changed(card.id);
    return answer;
  }

  async update(tenantId: number, cardId: number, ruleId: number, patch: RulePatch, who: Who) {
    return this.change(tenantId, cardId, ruleId, who, async (db, card, rule, at) => {
      if (rule.status === 'ended') throw new AppError('rule_state_conflict', 'An ended rule cannot change.');
      const definition = validated(merged(rule.definition, patch), card);
      // A rule that has been active may have produced journal rows: those keep naming its old version.
      await reviseRule(db, rule, definition, rule.status !== 'draft', at);
      return { action: 'rule.updated', details: { definition } };
    });
  }

  async activate(tenantId: number, cardId: number, ruleId: number, who: Who) {
    return this.change(tenantId, cardId, ruleId, who, async (db, card, rule, at) => {
      if (rule.status === 'ended')
        throw new AppError('rule_state_conflict', 'An ended rule cannot be activated again.');
      if (rule.status === 'active') return undefined;
      await this.roomForOneMore(db, card.id);
      await setRuleStatus(db, rule.id, 'active', at);
      return { action: 'rule.activated', details: { from: rule.status } };
    });
  }

  async pause(tenantId: number, cardId: number, ruleId: number, who: Who) {
    return this.change(tenantId, cardId, ruleId, who, async (db, _card, rule, at) => {
      if (rule.status === 'paused') return undefined;
      if (rule.status !== 'active')
        throw new AppError(
          'rule_state_conflict',
          `${/^[aeiou]/.test(rule.status) ? 'An' : 'A'} ${rule.status} rule cannot be paused.`,
        );
      await setRuleStatus(db, rule.id, 'paused', at);
      return { action: 'rule.paused', details: {} };
    });
  }

  /** A draft is deleted; an active or paused rule is ended (kept: journal rows name its versions). */
  async remove(tenantId: number, cardId: number, ruleId: number, who: Who) {
    const card = await this.cardOrFail(tenantId, cardId);
    const status = await withTransaction(this.deps.pool, async (db) => {
      const rule = await this.ruleOrFail(db, card, ruleId, true);
      if (rule.status === 'ended') return 'ended' as const;
      if (rule.status === 'draft') await deleteDraft(db, rule.id);
      else await setRuleStatus(db, rule.id, 'ended', this.deps.clock.now());
      const outcome = rule.status === 'draft' ? ('deleted' as const) : ('ended' as const);
      await this.audit(db, who, tenantId, `rule.${outcome}`, rule, { from: rule.status });
      return outcome;
    });
    this.changed(card.id);
    return { rule_id: ruleId, deleted: status === 'deleted', status };
  }

  /** One change of a rule under its row lock, audited; `apply` answers undefined when nothing changes. */
  private async change(
    tenantId: number,
    cardId: number,
    ruleId: number,
    who: Who,
    apply: (
      db: PoolClient,
      card: Card,
      rule: RuleRow,
      at: Date,
    ) => Promise<{ action: string; details: Record<string, unknown> } | undefined>,
  ) {
    const card = await this.cardOrFail(tenantId, cardId);
    const rule = await withTransaction(this.deps.pool, async (db) => {
      const locked = await this.ruleOrFail(db, card, ruleId, true);
      const done = await apply(db, card, locked, this.deps.clock.now());
      const after = await this.ruleOrFail(db, card, ruleId);
      if (done) await this.audit(db, who, tenantId, done.action, after, done.details);
      return after;
    });
    this.changed(card.id);
    return { rule: ruleRecord(rule, card) };
  }

  /** Under the card's row lock: one more active rule must fit. */
  private async roomForOneMore(db: PoolClient, cardId: number): Promise<void> {
    if ((await lockCardCountActive(db, cardId)) >= MAX_ACTIVE_RULES)
      throw new AppError('active_rule_limit', undefined, { max_active_rules: MAX_ACTIVE_RULES });
  }

  private async cardOrFail(tenantId: number, cardId: number): Promise<Card> {
    const card = await findCard(this.deps.pool, tenantId, cardId);
    if (!card) throw new AppError('card_not_found');
    return card;
  }

  private async ruleOrFail(db: PoolClient | Pool, card: Card, ruleId: number, lock = false): Promise<RuleRow> {
    const rule = await findRule(db, card.tenant_id, card.id, ruleId, lock);
    if (!rule) throw new AppError('rule_not_found');
    return rule;
  }

  private audit(
    db: PoolClient,
    who: Who,
    tenantId: number,
    action: string,
    rule: RuleRow,
    details: Record<string, unknown>,
  ) {
    return recordAudit(this.deps.outbox, db, tenantId, {
      actor: auditActor(who),
      action,
      target: { card_id: rule.card_id, rule_id: rule.id },
      details: { ...details, version: rule.version, status: rule.status },
      request_id: who.request_id,
    });
  }
}

export type { RuleStatus };
