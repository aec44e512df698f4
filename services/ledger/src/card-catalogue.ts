import { randomBytes } from 'node:crypto';
import { AppError, type AdminMeta, type CardSummary, type RewardSummary } from '@loyalty/contracts';
import {
  auditActor,
  isUniqueViolation,
  recordAudit,
  withTransaction,
  type Outbox,
  type Pool,
  type Queryable,
} from '@loyalty/runtime';
import { decimal, decimalNumber, decimalText, fromCents, parseDecimal, toCents, type Decimal } from './domain/money.ts';
import type { CardCache, RuledCard } from './card-cache.ts';
import type { CashbackRule } from './domain/formulas.ts';
import { isTimeZone } from './domain/rules/index.ts';
import {
  findCard,
  findReward,
  insertCard,
  insertReward,
  listCards,
  listRewards,
  updateCard,
  updateReward,
  type Card,
  type Reward,
} from './store/cards.ts';

// ---- views --------------------------------------------------------------------------------------

export function cashbackConfigView(c: Card) {
  return {
    cashback_percentage: cashbackPercentage(c),
    cashback_min_amount: fromCents(c.cashback_min_cents ?? 0),
    cashback_max_amount: c.cashback_max_cents === null ? null : fromCents(c.cashback_max_cents),
    allows_pin_redemption: c.allows_pin_redemption,
  };
}

/** A cashback card's percentage as the interface writes it. */
export function cashbackPercentage(c: Card): number {
  return decimalNumber(parseDecimal(c.cashback_percentage ?? '0'));
}

/** A card as the operator sees it. */
function cardRecord(c: Card) {
  return {
    id: c.id,
    tenant_id: c.tenant_id,
    unique_identifier: c.unique_identifier,
    name: c.name,
    description: c.description,
    reward_system: c.reward_system,
    currency: c.currency,
    cashback_config: c.reward_system === 'cashback' ? cashbackConfigView(c) : null,
    points_ratio: c.points_ratio === null ? null : decimalNumber(parseDecimal(c.points_ratio)),
    referrer_bonus: c.referrer_bonus,
    referee_bonus: c.referee_bonus,
    referral_bonus_on_first_purchase: c.referral_bonus_on_first_purchase,
    claim_lifetime_hours: c.claim_lifetime_hours,
    expiry_days: c.expiry_days,
    pending_days: c.pending_days,
    expiry_warning_days: c.expiry_warning_days,
    transfers_enabled: c.transfers_enabled,
    transfer_monthly_cap: c.transfer_monthly_cap,
    time_zone: c.time_zone,
    point_value: c.point_value === null ? null : decimalNumber(parseDecimal(c.point_value)),
    created_at: c.created_at.toISOString(),
    updated_at: c.updated_at.toISOString(),
  };
}

/** A cashback card in GET /api/v1/cashback/cards. */
function cashbackCardView(c: Card) {
  return {
    id: c.id,
    unique_identifier: c.unique_identifier,
    name: c.name,
    description: c.description,
    reward_system: 'cashback' as const,
    currency: c.currency,
    cashback_config: cashbackConfigView(c),
  };
}

export function cardSummary(c: Card): CardSummary {
  return {
    id: c.id,
    name: c.name,
    reward_system: c.reward_system,
    referrer_bonus: c.referrer_bonus,
    referee_bonus: c.referee_bonus,
    referral_bonus_on_first_purchase: c.referral_bonus_on_first_purchase,
    claim_lifetime_hours: c.claim_lifetime_hours,
  };
}

function rewardRecord(r: Reward) {
  return {
    id: r.id,
    card_id: r.card_id,
    name: r.name,
    description: r.description,
    points_cost: r.points_cost,
    active: r.active,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

export function rewardSummary(r: Reward): RewardSummary {
  return { id: r.id, card_id: r.card_id, name: r.name, points_cost: r.points_cost, active: r.active };
}

export function cashbackRule(c: Card): CashbackRule {
  return {
    percentage: parseDecimal(c.cashback_percentage ?? '0'),
    minCents: c.cashback_min_cents ?? 0,
    maxCents: c.cashback_max_cents,
  };
}

/** A points card's ratio (points per currency unit); the table requires one on every points card. */
export function pointsRatio(c: Card): Decimal {
  if (c.points_ratio === null) throw new Error(`points card ${c.id} has no points_ratio`);
  return parseDecimal(c.points_ratio);
}

// ---- lookups ------------------------------------------------------------------------------------

/** The tenant's card of the given kind: card_not_found (also for a foreign card), wrong_card_type. */
export async function cardOfKind(
  cards: CardCache,
  tenantId: number,
  cardId: number,
  kind: 'cashback' | 'points',
): Promise<RuledCard> {
  const card = await cards.get(tenantId, cardId);
  if (!card) throw new AppError('card_not_found');
  if (card.reward_system !== kind) {
    throw new AppError(
      'wrong_card_type',
      `Card ${cardId} is a ${card.reward_system} card; this operation needs a ${kind} card.`,
      {
        card_reward_system: card.reward_system,
        required_reward_system: kind,
      },
    );
  }
  return card;
}

// ---- provisioning -------------------------------------------------------------------------------

interface CashbackConfigInput {
  cashback_percentage?: number;
  cashback_min_amount?: number;
  cashback_max_amount?: number | null;
  allows_pin_redemption?: boolean;
}

interface CardSettingsInput {
  name?: string;
  description?: string;
  currency?: string;
  cashback_config?: CashbackConfigInput;
  points_ratio?: number;
  referrer_bonus?: number;
  referee_bonus?: number;
  referral_bonus_on_first_purchase?: boolean;
  claim_lifetime_hours?: number;
  expiry_days?: number | null;
  pending_days?: number;
  expiry_warning_days?: number;
  transfers_enabled?: boolean;
  transfer_monthly_cap?: number | null;
  time_zone?: string;
  point_value?: number | null;
}

function applyCashbackConfig(card: Card, cfg: CashbackConfigInput): void {
  if (cfg.cashback_percentage !== undefined)
    card.cashback_percentage = decimalText(decimal(cfg.cashback_percentage, 4));
  if (cfg.cashback_min_amount !== undefined) card.cashback_min_cents = toCents(cfg.cashback_min_amount);
  if (cfg.cashback_max_amount !== undefined)
    card.cashback_max_cents = cfg.cashback_max_amount === null ? null : toCents(cfg.cashback_max_amount);
  if (cfg.allows_pin_redemption !== undefined) card.allows_pin_redemption = cfg.allows_pin_redemption;
}

function applySettings(card: Card, d: CardSettingsInput): void {
  if (d.cashback_config !== undefined && card.reward_system !== 'cashback')
    throw new AppError('wrong_card_type', 'cashback_config applies to cashback cards only.');
  if (d.points_ratio !== undefined && card.reward_system !== 'points')
    throw new AppError('wrong_card_type', 'points_ratio applies to points cards only.');
  if (d.name !== undefined) card.name = d.name;
  if (d.description !== undefined) card.description = d.description;
  if (d.currency !== undefined) card.currency = d.currency;
  if (d.referrer_bonus !== undefined) card.referrer_bonus = d.referrer_bonus;
  if (d.referee_bonus !== undefined) card.referee_bonus = d.referee_bonus;
  if (d.referral_bonus_on_first_purchase !== undefined)
    card.referral_bonus_on_first_purchase = d.referral_bonus_on_first_purchase;
  if (d.claim_lifetime_hours !== undefined) card.claim_lifetime_hours = d.claim_lifetime_hours;
  if (d.expiry_days !== undefined) card.expiry_days = d.expiry_days;
  if (d.pending_days !== undefined) card.pending_days = d.pending_days;
  if (d.expiry_warning_days !== undefined) card.expiry_warning_days = d.expiry_warning_days;
  if ((d.transfers_enabled === true || typeof d.transfer_monthly_cap === 'number') && card.reward_system !== 'points')
    throw new AppError('wrong_card_type', 'Transfers apply to points cards only.');
  if (d.transfers_enabled !== undefined) card.transfers_enabled = d.transfers_enabled;
  if (d.transfer_monthly_cap !== undefined) card.transfer_monthly_cap = d.transfer_monthly_cap;
  if (d.time_zone !== undefined) {
    if (!isTimeZone(d.time_zone))
      throw new AppError('invalid_time_zone', undefined, {
        fields: [{ field: 'time_zone', message: `${d.time_zone} is not an IANA time zone name` }],
      });
    card.time_zone = d.time_zone;
  }
  if (d.point_value !== undefined) {
    if (d.point_value !== null && card.reward_system !== 'points')
      throw new AppError('wrong_card_type', 'point_value applies to points cards only.');
    card.point_value = d.point_value === null ? null : decimalText(decimal(d.point_value, 6));
  }
  if (d.cashback_config) applyCashbackConfig(card, d.cashback_config);
  if (d.points_ratio !== undefined) card.points_ratio = decimalText(decimal(d.points_ratio, 6));
}

/** The settings an operator call gave (the path's ids left out), as the audit log records them. */
function givenSettings(d: { tenant_id: number; card_id?: number; reward_id?: number }): Record<string, unknown> {
  const { tenant_id: _t, card_id: _c, reward_id: _r, ...given } = d;
  return given;
}

/**
 * Operator provisioning of cards and rewards (tenant from the path), and lookups for other
 * services. Every change of a card's or a reward's settings is audited (operator actor) in the
 * transaction that makes it.
 */
export class CardCatalogue {
  constructor(
    private readonly pool: Pool,
    private readonly outbox: Outbox,
    /** Told of every changed card (every replica forgets its cached copy). */
    private readonly changed: (cardId: number) => void = () => undefined,
    /** The operator named this tenant: it must exist (identity answers tenant_not_found otherwise). */
    private readonly tenantMustExist: (tenantId: number, requestId: string) => Promise<void> = async () => undefined,
  ) {}

  async createCard(d: NewCardInput, meta: AdminMeta) {
    // The ledger keeps no list of tenants: without asking identity, a card was made for a tenant
    // that does not exist (and a tenant created later with that id found it as its own).
    await this.tenantMustExist(d.tenant_id, meta.request_id);
    const card = newCard(d);
    applySettings(card, d);
    try {
      return await withTransaction(this.pool, async (db) => {
        const saved = await insertCard(db, card);
        await this.audit(db, meta, saved.tenant_id, {
          action: 'card.created',
          target: { card_id: saved.id },
          details: givenSettings(d),
        });
        return { card: cardRecord(saved) };
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('card_identifier_taken');
      throw err;
    }
  }

  async updateCard(d: CardSettingsInput & { tenant_id: number; card_id: number }, meta: AdminMeta) {
    const card = await this.cardOrFail(d.tenant_id, d.card_id);
    applySettings(card, d);
    const saved = await withTransaction(this.pool, async (db) => {
      const updated = await updateCard(db, card);
      await this.audit(db, meta, card.tenant_id, {
        action: 'card.updated',
        target: { card_id: card.id },
        details: { changes: givenSettings(d) },
      });
      return updated;
    });
    this.changed(card.id);
    return { card: cardRecord(saved) };
  }

  async listCards(d: { tenant_id: number }) {
    const cards = (await listCards(this.pool, d.tenant_id)).map(cardRecord);
    return { cards, total: cards.length };
  }

  async getCard(d: { tenant_id: number; card_id: number }) {
    const card = await this.cardOrFail(d.tenant_id, d.card_id);
    return {
      card: cardRecord(card),
      rewards: (await listRewards(this.pool, card.tenant_id, card.id)).map(rewardRecord),
    };
  }

  async createReward(
    d: { tenant_id: number; card_id: number; name: string; description: string; points_cost: number; active: boolean },
    meta: AdminMeta,
  ) {
    const card = await this.cardOrFail(d.tenant_id, d.card_id);
    if (card.reward_system !== 'points') throw new AppError('wrong_card_type', 'Rewards belong to points cards.');
    return withTransaction(this.pool, async (db) => {
      const reward = await insertReward(db, {
        tenant_id: d.tenant_id,
        card_id: d.card_id,
        name: d.name,
        description: d.description,
        points_cost: d.points_cost,
        active: d.active,
      });
      await this.audit(db, meta, d.tenant_id, {
        action: 'reward.created',
        target: { card_id: d.card_id, reward_id: reward.id },
        amounts: { points_cost: reward.points_cost },
        details: { name: reward.name, active: reward.active },
      });
      return { reward: rewardRecord(reward) };
    });
  }

  async updateReward(
    d: {
      tenant_id: number;
      card_id: number;
      reward_id: number;
      name?: string;
      description?: string;
      points_cost?: number;
      active?: boolean;
    },
    meta: AdminMeta,
  ) {
    await this.cardOrFail(d.tenant_id, d.card_id);
    const reward = await findReward(this.pool, d.tenant_id, d.card_id, d.reward_id);
    if (!reward) throw new AppError('reward_not_found');
    const changed = {
      ...reward,
      name: d.name ?? reward.name,
      description: d.description ?? reward.description,
      points_cost: d.points_cost ?? reward.points_cost,
      active: d.active ?? reward.active,
    };
    return withTransaction(this.pool, async (db) => {
      const saved = await updateReward(db, changed);
      await this.audit(db, meta, d.tenant_id, {
        action: 'reward.updated',
        target: { card_id: d.card_id, reward_id: saved.id },
        amounts: { points_cost: saved.points_cost },
        details: { changes: givenSettings(d) },
      });
      return { reward: rewardRecord(saved) };
    });
  }

  async listRewards(d: { tenant_id: number; card_id: number }) {
    await this.cardOrFail(d.tenant_id, d.card_id);
    const rewards = (await listRewards(this.pool, d.tenant_id, d.card_id)).map(rewardRecord);
    return { rewards, total: rewards.length };
  }

  /** GET /api/v1/cashback/cards: the calling tenant's cashback cards. */
  async cashbackCards(tenantId: number) {
    const cards = (await listCards(this.pool, tenantId, 'cashback')).map(cashbackCardView);
    return { cards, total: cards.length };
  }

  /** internal.card.get */
  async cardSummary(tenantId: number, cardId: number) {
    return { card: cardSummary(await this.cardOrFail(tenantId, cardId)) };
  }

  /** internal.reward.get: reward_not_found unless the reward belongs to the card. */
  async rewardSummary(tenantId: number, cardId: number, rewardId: number) {
    await this.cardOrFail(tenantId, cardId);
    const reward = await findReward(this.pool, tenantId, cardId, rewardId);
    if (!reward) throw new AppError('reward_not_found');
    return { reward: rewardSummary(reward) };
  }

  private async cardOrFail(tenantId: number, cardId: number): Promise<Card> {
    const card = await findCard(this.pool, tenantId, cardId);
    if (!card) throw new AppError('card_not_found');
    return card;
  }

  private audit(
    db: Queryable,
    meta: AdminMeta,
    tenantId: number,
    e: {
      action: string;
      target: Record<string, number>;
      amounts?: Record<string, number>;
      details: Record<string, unknown>;
    },
  ) {
    return recordAudit(this.outbox, db, tenantId, { actor: auditActor(meta), ...e, request_id: meta.request_id });
  }
}

export function cardCatalogue(
  pool: Pool,
  outbox: Outbox,
  changed: (cardId: number) => void = () => undefined,
  tenantMustExist?: (tenantId: number, requestId: string) => Promise<void>,
): CardCatalogue {
  return new CardCatalogue(pool, outbox, changed, tenantMustExist);
}

type NewCardInput = CardSettingsInput & {
  tenant_id: number;
  name: string;
  reward_system: 'cashback' | 'points';
  unique_identifier?: string;
};

/** A card with the defaults of a new one; the operator's settings are applied over them. */
function newCard(d: NewCardInput): Card {
  return {
    id: 0,
    tenant_id: d.tenant_id,
    unique_identifier: d.unique_identifier ?? `${d.reward_system}-${randomBytes(6).toString('hex')}`,
    name: d.name,
    description: '',
    reward_system: d.reward_system,
    currency: 'USD',
    cashback_percentage: null,
    cashback_min_cents: d.reward_system === 'cashback' ? 0 : null,
    cashback_max_cents: null,
    allows_pin_redemption: false,
    points_ratio: null,
    referrer_bonus: 0,
    referee_bonus: 0,
    referral_bonus_on_first_purchase: false,
    claim_lifetime_hours: 72,
    expiry_days: null,
    pending_days: 0,
    expiry_warning_days: 14,
    transfers_enabled: false,
    transfer_monthly_cap: null,
    time_zone: 'UTC',
    point_value: null,
    created_at: new Date(),
    updated_at: new Date(),
  };
}
