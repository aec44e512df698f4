import { returnedRow } from '@loyalty/runtime';
import type { Queryable } from '@loyalty/runtime';

/** A card row. Rates are exact numeric text; money is cents. */
export interface Card {
  id: number;
  tenant_id: number;
  unique_identifier: string;
  name: string;
  description: string;
  reward_system: 'cashback' | 'points';
  currency: string;
  cashback_percentage: string | null;
  cashback_min_cents: number | null;
  cashback_max_cents: number | null;
  allows_pin_redemption: boolean;
  points_ratio: string | null;
  referrer_bonus: number;
  referee_bonus: number;
  referral_bonus_on_first_purchase: boolean;
  claim_lifetime_hours: number;
  /** Lifecycle of credits (lots/terms.ts): null expiry_days never expires. */
  expiry_days: number | null;
  pending_days: number;
  expiry_warning_days: number;
  /** Members may transfer points to each other (transfers/); null cap: none per month. */
  transfers_enabled: boolean;
  transfer_monthly_cap: number | null;
  /** IANA time zone of the earning rules. */
  time_zone: string;
  /** What one point is worth in the card's currency (exact numeric text); null: not set. */
  point_value: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface Reward {
  id: number;
  tenant_id: number;
  card_id: number;
  name: string;
  description: string;
  points_cost: number;
  active: boolean;
  created_at: Date;
  updated_at: Date;
}

const CARD_COLUMNS = `id, tenant_id, unique_identifier, name, description, reward_system, currency,
  cashback_percentage::text AS cashback_percentage, cashback_min_cents, cashback_max_cents, allows_pin_redemption,
  points_ratio::text AS points_ratio, referrer_bonus, referee_bonus, referral_bonus_on_first_purchase, claim_lifetime_hours,
  expiry_days, pending_days, expiry_warning_days, transfers_enabled, transfer_monthly_cap, time_zone, point_value::text AS point_value, created_at, updated_at`;
const REWARD_COLUMNS = 'id, tenant_id, card_id, name, description, points_cost, active, created_at, updated_at';

export type CardFields = Omit<Card, 'id' | 'created_at' | 'updated_at'>;

export async function insertCard(db: Queryable, c: CardFields): Promise<Card> {
  const { rows } = await db.query<Card>(
    `INSERT INTO ledger.cards (tenant_id, unique_identifier, name, description, reward_system, currency, cashback_percentage,
       cashback_min_cents, cashback_max_cents, allows_pin_redemption, points_ratio, referrer_bonus, referee_bonus,
       referral_bonus_on_first_purchase, claim_lifetime_hours, expiry_days, pending_days, expiry_warning_days, time_zone,
       transfers_enabled, transfer_monthly_cap, point_value)
     VALUES ($1, $2, $3, $4, $5, $6, $7::numeric, $8, $9, $10, $11::numeric, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22::numeric)
     RETURNING ${CARD_COLUMNS}`,
    [
      c.tenant_id,
      c.unique_identifier,
      c.name,
      c.description,
      c.reward_system,
      c.currency,
      c.cashback_percentage,
      c.cashback_min_cents,
      c.cashback_max_cents,
      c.allows_pin_redemption,
      c.points_ratio,
      c.referrer_bonus,
      c.referee_bonus,
      c.referral_bonus_on_first_purchase,
      c.claim_lifetime_hours,
      c.expiry_days,
      c.pending_days,
      c.expiry_warning_days,
      c.time_zone,
      c.transfers_enabled,
      c.transfer_monthly_cap,
      c.point_value,
    ],
  );
  return returnedRow(rows, 'insertCard');
}

/** Replace a card's changeable settings (the caller merged the change into the current row). */
export async function updateCard(db: Queryable, c: Card): Promise<Card> {
  const { rows } = await db.query<Card>(
    `UPDATE ledger.cards SET name = $3, description = $4, currency = $5, cashback_percentage = $6::numeric, cashback_min_cents = $7,
       cashback_max_cents = $8, allows_pin_redemption = $9, points_ratio = $10::numeric, referrer_bonus = $11, referee_bonus = $12,
       referral_bonus_on_first_purchase = $13, claim_lifetime_hours = $14, expiry_days = $15, pending_days = $16,
       expiry_warning_days = $17, time_zone = $18, transfers_enabled = $19, transfer_monthly_cap = $20, point_value = $21::numeric, updated_at = now()
     WHERE tenant_id = $1 AND id = $2 RETURNING ${CARD_COLUMNS}`,
    [
      c.tenant_id,
      c.id,
      c.name,
      c.description,
      c.currency,
      c.cashback_percentage,
      c.cashback_min_cents,
      c.cashback_max_cents,
      c.allows_pin_redemption,
      c.points_ratio,
      c.referrer_bonus,
      c.referee_bonus,
      c.referral_bonus_on_first_purchase,
      c.claim_lifetime_hours,
      c.expiry_days,
      c.pending_days,
      c.expiry_warning_days,
      c.time_zone,
      c.transfers_enabled,
      c.transfer_monthly_cap,
      c.point_value,
    ],
  );
  return returnedRow(rows, 'updateCard');
}

/** A card of the tenant; a foreign card is as absent as a missing one. */
export async function findCard(db: Queryable, tenantId: number, cardId: number): Promise<Card | undefined> {
  const { rows } = await db.query<Card>(`SELECT ${CARD_COLUMNS} FROM ledger.cards WHERE tenant_id = $1 AND id = $2`, [
    tenantId,
    cardId,
  ]);
  return rows[0];
}

export async function listCards(
  db: Queryable,
  tenantId: number,
  rewardSystem?: 'cashback' | 'points',
): Promise<Card[]> {
  const { rows } = await db.query<Card>(
    `SELECT ${CARD_COLUMNS} FROM ledger.cards WHERE tenant_id = $1 AND ($2::text IS NULL OR reward_system = $2) ORDER BY id`,
    [tenantId, rewardSystem ?? null],
  );
  return rows;
}

export async function insertReward(
  db: Queryable,
  r: Omit<Reward, 'id' | 'created_at' | 'updated_at'>,
): Promise<Reward> {
  const { rows } = await db.query<Reward>(
    `INSERT INTO ledger.rewards (tenant_id, card_id, name, description, points_cost, active) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${REWARD_COLUMNS}`,
    [r.tenant_id, r.card_id, r.name, r.description, r.points_cost, r.active],
  );
  return returnedRow(rows, 'insertReward');
}

export async function updateReward(db: Queryable, r: Reward): Promise<Reward> {
  const { rows } = await db.query<Reward>(
    `UPDATE ledger.rewards SET name = $3, description = $4, points_cost = $5, active = $6, updated_at = now()
     WHERE tenant_id = $1 AND id = $2 RETURNING ${REWARD_COLUMNS}`,
    [r.tenant_id, r.id, r.name, r.description, r.points_cost, r.active],
  );
  return returnedRow(rows, 'updateReward');
}

/** A reward of the card (and tenant). */
export async function findReward(
  db: Queryable,
  tenantId: number,
  cardId: number,
  rewardId: number,
): Promise<Reward | undefined> {
  const { rows } = await db.query<Reward>(
    `SELECT ${REWARD_COLUMNS} FROM ledger.rewards WHERE tenant_id = $1 AND card_id = $2 AND id = $3`,
    [tenantId, cardId, rewardId],
  );
  return rows[0];
}

export async function listRewards(db: Queryable, tenantId: number, cardId: number): Promise<Reward[]> {
  const { rows } = await db.query<Reward>(
    `SELECT ${REWARD_COLUMNS} FROM ledger.rewards WHERE tenant_id = $1 AND card_id = $2 ORDER BY id`,
    [tenantId, cardId],
  );
  return rows;
}
