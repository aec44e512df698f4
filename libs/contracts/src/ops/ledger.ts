import { z } from 'zod';
import {
  decimalNumber,
  Id,
  IdParam,
  Metadata,
  Money,
  Pagination,
  PositiveMoney,
  Text,
  Timestamp,
  pageQuery,
} from '../common.ts';
import { memberFields, memberRequired, memberRule, needsMember, Reference } from './member-ref.ts';
import { earnRuleFields, RefundLineItems, RuleApplied } from './rules.ts';
import { EarnTier, TierBadge } from './tiers.ts';
import { defineOperations } from './types.ts';

/**
 * Cashback and points, owned by the ledger service, plus the
 * member's redemption PIN and the operator's card and reward provisioning.
 * Money is a JSON number with at most two decimals; the ledger keeps it in integer cents.
 */
const cashback = { service: 'ledger', tag: 'Cashback' } as const;
const points = { service: 'ledger', tag: 'Points' } as const;

/** A refund by line names the purchase it refunds. */
const lineItemsNeedReference = { message: 'is required with line_items (the purchase refunded)', path: ['reference'] };

const AccountQuery = z.object({ card_id: IdParam, member_id: IdParam });
const HistoryQuery = z.object({ card_id: IdParam, member_id: IdParam, ...pageQuery(20, 100) });

/** What is left uncovered when a refund deducts more than the balance holds (never a negative balance). */
const BalanceWarning = z
  .object({
    code: z.literal('insufficient_balance'),
    message: z.string(),
    requested: z.number().describe('deduction the refund asked for (after the purchase cap)'),
    deducted: z.number().describe('what was actually deducted: the whole balance'),
    uncovered: z.number().describe('requested minus deducted'),
  })
  .meta({ id: 'BalanceWarning' });

/** When a credit becomes spendable and when it expires (only when it is pending / expires). */
const creditTerms = {
  available_at: Timestamp.optional().describe('when the pending amount becomes spendable; only when it is pending'),
  expires_at: Timestamp.optional().describe('when the credit expires; only on cards with expiry_days'),
};

/** The next dates on which spendable points expire, with how many. */
const PointsExpiry = z.object({ points: z.number().int(), expires_at: Timestamp }).meta({ id: 'PointsExpiry' });
const CashbackExpiry = z.object({ amount: z.number(), expires_at: Timestamp }).meta({ id: 'CashbackExpiry' });

export const CashbackConfig = z
  .object({
    cashback_percentage: z.number(),
    cashback_min_amount: z.number(),
    cashback_max_amount: z.number().nullable().describe('null: no cap'),
    allows_pin_redemption: z.boolean(),
  })
  .meta({ id: 'CashbackConfig' });

export const CashbackCard = z
  .object({
    id: Id,
    unique_identifier: z.string(),
    name: z.string(),
    description: z.string(),
    reward_system: z.literal('cashback'),
    currency: z.string(),
    cashback_config: CashbackConfig,
  })
  .meta({ id: 'CashbackCard' });

export const CashbackHistoryEntry = z
  .object({
    id: Id,
    type: z.enum(['earning', 'redemption']).describe('redemption for every deduction (redeem and refund)'),
    amount: z.number().describe('negative for a deduction'),
    points: z.literal(0),
    event: z.string(),
    created_at: Timestamp,
  })
  .meta({ id: 'CashbackTransaction' });

export const PointsHistoryEntry = z
  .object({
    id: Id,
    points: z.number().int().describe('negative for a deduction'),
    event: z.string(),
    created_at: Timestamp,
  })
  .meta({ id: 'PointsTransaction' });

export const cashbackOperations = defineOperations({
  'cashback.earn': {
    ...cashback,
    method: 'POST',
    path: '/api/v1/cashback/cashback/earn',
    operation: 'cashback.earn',
    scope: 'cashback_write',
    memberToken: false,
    idempotent: true,
    summary:
      'Credit cashback for a purchase (percentage, minimum purchase and cap of the card); an unknown member is created',
    body: z
      .object({
        card_id: Id,
        ...memberFields,
        member_name: Text.trim().min(1).max(200).optional(),
        purchase_amount: PositiveMoney,
        reference: Reference.optional(),
        metadata: Metadata.optional(),
        ...earnRuleFields,
      })
      .refine(needsMember, memberRule)
      .meta({ anyOf: memberRequired }),
    response: z.object({
      transaction_id: Id,
      purchase_amount: z.number(),
      cashback_percentage: z.number(),
      cashback_earned: z.number(),
      new_balance: z.number(),
      member_id: Id,
      card_id: Id,
      is_new_member: z.boolean(),
      reference: z.string().nullable(),
      earned_at: Timestamp,
      pending_cashback: z
        .number()
        .optional()
        .describe("the cashback earned is pending (the card's pending_days); only then"),
      ...creditTerms,
      rules_applied: z
        .array(RuleApplied)
        .optional()
        .describe('the earning rules beyond the base earn that gave something; absent when none did'),
      tier: EarnTier.optional().describe("cards with tiers only: the member's tier after this earn"),
    }),
    errors: [
      'card_not_found',
      'member_not_found',
      'wrong_card_type',
      'duplicate_reference',
      'balance_limit_exceeded',
      'idempotency_key_reused',
      'member_inactive',
      'line_items_mismatch',
    ],
  },
  'cashback.redeem': {
    ...cashback,
    method: 'POST',
    path: '/api/v1/cashback/cashback/redeem',
    operation: 'cashback.redeem',
    scope: 'cashback_write',
    memberToken: true,
    idempotent: true,
    summary: "Debit the token member's cashback balance; never more than the balance",
    body: z.object({
      card_id: Id,
      amount: PositiveMoney,
      pin: Text.trim()
        .regex(/^[0-9]{4,6}$/, 'must be 4 to 6 digits')
        .optional(),
      reference: Reference.optional(),
    }),
    response: z.object({
      transaction_id: Id,
      amount_redeemed: z.number(),
      new_balance: z.number(),
      member_id: Id,
      card_id: Id,
      reference: z.string().nullable(),
      redeemed_at: Timestamp,
    }),
    errors: [
      'card_not_found',
      'wrong_card_type',
      'insufficient_balance',
      'pin_required',
      'invalid_pin',
      'pin_locked',
      'idempotency_key_reused',
    ],
  },
  'cashback.balance': {
    ...cashback,
    method: 'GET',
    path: '/api/v1/cashback/cashback/balance',
    operation: 'cashback.balance',
    scope: 'cashback_read',
    memberToken: false,
    idempotent: false,
    summary: "A member's cashback balance on a card",
    query: AccountQuery,
    response: z.object({
      card_id: Id,
      member_id: Id,
      cashback_balance: z.number().describe('spendable: available cashback minus what holds reserve'),
      pending_cashback: z.number().describe('earned, not spendable before its available_at (the return window)'),
      held_cashback: z.number().describe('reserved by holds'),
      next_expiries: z.array(CashbackExpiry).describe('the next (at most three) expiries of spendable cashback'),
      cashback_percentage: z.number(),
      currency: z.string(),
      reward_system: z.literal('cashback'),
      queried_at: Timestamp,
      tier: TierBadge.optional().describe("cards with tiers only: the member's tier"),
    }),
    errors: ['card_not_found', 'member_not_found', 'wrong_card_type'],
  },
  'cashback.history': {
    ...cashback,
    method: 'GET',
    path: '/api/v1/cashback/cashback/history',
    operation: 'cashback.history',
    scope: 'cashback_read',
    memberToken: false,
    idempotent: false,
    summary: "A member's cashback transactions on a card, newest first (limit default 20, max 100)",
    query: HistoryQuery,
    response: z.object({
      card_id: Id,
      member_id: Id,
      transactions: z.array(CashbackHistoryEntry),
      pagination: Pagination,
    }),
    errors: ['card_not_found', 'member_not_found', 'wrong_card_type'],
  },
  'cashback.refund': {
    ...cashback,
    method: 'POST',
    path: '/api/v1/cashback/cashback/refund',
    operation: 'cashback.refund',
    scope: 'cashback_write',
    memberToken: false,
    idempotent: true,
    summary:
      'Deduct cashback for a refunded purchase: computed from refund_amount unless cashback_to_deduct is given, capped by what the purchase named by reference earned minus earlier refunds on it, and by the balance (balance_warning)',
    body: z
      .object({
        card_id: Id,
        ...memberFields,
        refund_amount: PositiveMoney,
        cashback_to_deduct: Money.optional(),
        reference: Reference.optional(),
        line_items: RefundLineItems.optional(),
      })
      .refine(needsMember, memberRule)
      .refine((b) => b.line_items === undefined || b.reference !== undefined, lineItemsNeedReference)
      .refine((b) => b.line_items === undefined || b.cashback_to_deduct === undefined, {
        message: 'name the refunded line_items or cashback_to_deduct, not both',
        path: ['line_items'],
      })
      .meta({ anyOf: memberRequired }),
    response: z.object({
      transaction_id: Id,
      cashback_deducted: z.number(),
      pending_cashback_deducted: z
        .number()
        .optional()
        .describe("part of cashback_deducted taken from the purchase's pending cashback; only when not 0"),
      refund_amount: z.number(),
      previous_balance: z.number(),
      new_balance: z.number(),
      currency: z.string(),
      member_id: Id,
      card_id: Id,
      reference: z.string().nullable(),
      balance_warning: BalanceWarning.nullable(),
      refunded_at: Timestamp,
    }),
    errors: [
      'card_not_found',
      'member_not_found',
      'wrong_card_type',
      'refund_reference_mismatch',
      'idempotency_key_reused',
      'line_items_mismatch',
    ],
  },
  'cashback.cards': {
    ...cashback,
    method: 'GET',
    path: '/api/v1/cashback/cards',
    operation: 'cashback.cards',
    scope: 'card_read',
    memberToken: false,
    idempotent: false,
    summary: "The calling tenant's cashback cards",
    response: z.object({ cards: z.array(CashbackCard), total: z.number().int() }),
    errors: [],
  },
});

export const pointsOperations = defineOperations({
  'points.earn': {
    ...points,
    method: 'POST',
    path: '/api/v1/loyalty/points/earn',
    operation: 'points.earn',
    scope: 'points_write',
    memberToken: false,
    idempotent: true,
    summary: "Award floor(purchase_amount x the card's points ratio) points; an unknown member is created and mailed",
    body: z
      .object({
        card_id: Id,
        ...memberFields,
        member_name: Text.trim().min(1).max(200).optional(),
        purchase_amount: PositiveMoney,
        reference: Reference.optional(),
        metadata: Metadata.optional(),
        ...earnRuleFields,
      })
      .refine(needsMember, memberRule)
      .meta({ anyOf: memberRequired }),
    response: z.object({
      transaction_id: Id,
      points_earned: z.number().int(),
      new_balance: z.number().int(),
      member_id: Id,
      card_id: Id,
      is_new_member: z.boolean(),
      notification_sent: z
        .string()
        .nullable()
        .describe('points_earned when the mail was queued; null when the member has no email'),
      reference: z.string().nullable(),
      earned_at: Timestamp,
      pending_points: z
        .number()
        .int()
        .optional()
        .describe("the points earned are pending (the card's pending_days); only then"),
      ...creditTerms,
      rules_applied: z
        .array(RuleApplied)
        .optional()
        .describe('the earning rules beyond the base earn that gave something; absent when none did'),
      tier: EarnTier.optional().describe("cards with tiers only: the member's tier after this earn"),
    }),
    errors: [
      'card_not_found',
      'member_not_found',
      'wrong_card_type',
      'duplicate_reference',
      'balance_limit_exceeded',
      'idempotency_key_reused',
      'member_inactive',
      'line_items_mismatch',
    ],
  },
  'points.redeem': {
    ...points,
    method: 'POST',
    path: '/api/v1/loyalty/points/redeem',
    operation: 'points.redeem',
    scope: 'points_write',
    memberToken: true,
    idempotent: true,
    summary: "Redeem the token member's points for an active reward of the card",
    body: z.object({ card_id: Id, reward_id: Id, reference: Reference.optional() }),
    response: z.object({
      transaction_id: Id,
      reward_id: Id,
      reward_name: z.string(),
      points_redeemed: z.number().int(),
      new_balance: z.number().int(),
      member_id: Id,
      card_id: Id,
      reference: z.string().nullable(),
      redeemed_at: Timestamp,
    }),
    errors: [
      'card_not_found',
      'reward_not_found',
      'reward_inactive',
      'wrong_card_type',
      'insufficient_points',
      'idempotency_key_reused',
    ],
  },
  'points.refund': {
    ...points,
    method: 'POST',
    path: '/api/v1/loyalty/points/refund',
    operation: 'points.refund',
    scope: 'points_write',
    memberToken: false,
    idempotent: true,
    summary:
      'Deduct points for a refunded purchase: floor(refund_amount x ratio) unless points_to_deduct is given, capped by the purchase named by reference and by the balance (balance_warning)',
    body: z
      .object({
        card_id: Id,
        ...memberFields,
        refund_amount: PositiveMoney,
        points_to_deduct: z.number().int().min(0).max(1_000_000_000).optional(),
        reference: Reference.optional(),
        line_items: RefundLineItems.optional(),
      })
      .refine(needsMember, memberRule)
      .refine((b) => b.line_items === undefined || b.reference !== undefined, lineItemsNeedReference)
      .refine((b) => b.line_items === undefined || b.points_to_deduct === undefined, {
        message: 'name the refunded line_items or points_to_deduct, not both',
        path: ['line_items'],
      })
      .meta({ anyOf: memberRequired }),
    response: z.object({
      transaction_id: Id,
      points_deducted: z.number().int(),
      pending_points_deducted: z
        .number()
        .int()
        .optional()
        .describe("part of points_deducted taken from the purchase's pending points; only when not 0"),
      refund_amount: z.number(),
      previous_balance: z.number().int(),
      new_balance: z.number().int(),
      member_id: Id,
      card_id: Id,
      reference: z.string().nullable(),
      balance_warning: BalanceWarning.nullable(),
      refunded_at: Timestamp,
    }),
    errors: [
      'card_not_found',
      'member_not_found',
      'wrong_card_type',
      'refund_reference_mismatch',
      'idempotency_key_reused',
      'line_items_mismatch',
    ],
  },
  'points.balance': {
    ...points,
    method: 'GET',
    path: '/api/v1/loyalty/points/balance',
    operation: 'points.balance',
    scope: 'points_read',
    memberToken: false,
    idempotent: false,
    summary: "A member's points balance on a card",
    query: AccountQuery,
    response: z.object({
      card_id: Id,
      member_id: Id,
      points_balance: z.number().int().describe('spendable: available points minus what holds reserve'),
      pending_points: z.number().int().describe('earned, not spendable before their available_at (the return window)'),
      held_points: z.number().int().describe('reserved by pending claim requests'),
      next_expiries: z.array(PointsExpiry).describe('the next (at most three) expiries of spendable points'),
      reward_system: z.literal('points'),
      queried_at: Timestamp,
      tier: TierBadge.optional().describe("cards with tiers only: the member's tier"),
    }),
    errors: ['card_not_found', 'member_not_found', 'wrong_card_type'],
  },
  'points.history': {
    ...points,
    method: 'GET',
    path: '/api/v1/loyalty/points/history',
    operation: 'points.history',
    scope: 'points_read',
    memberToken: false,
    idempotent: false,
    summary: "A member's points transactions on a card, newest first (limit default 20, max 100)",
    query: HistoryQuery,
    response: z.object({
      card_id: Id,
      member_id: Id,
      transactions: z.array(PointsHistoryEntry),
      pagination: Pagination,
    }),
    errors: ['card_not_found', 'member_not_found', 'wrong_card_type'],
  },
});

/** The member's redemption PIN (a member-token endpoint beside the other member auth routes). */
export const memberPinOperations = defineOperations({
  'member.pin.set': {
    service: 'ledger',
    tag: 'Member authentication',
    method: 'POST',
    path: '/api/v1/auth/member/pin',
    operation: 'member.pin.set',
    scope: null,
    memberToken: true,
    // Setting a PIN is naturally idempotent (the same body leaves the same state); PINs are never
    // stored in an idempotency record.
    idempotent: false,
    summary:
      'Set (or change, with current_pin) the PIN that cashback redemption asks for on cards with allows_pin_redemption',
    body: z.object({
      pin: Text.trim().regex(/^[0-9]{4,6}$/, 'must be 4 to 6 digits'),
      current_pin: Text.trim()
        .regex(/^[0-9]{4,6}$/, 'must be 4 to 6 digits')
        .optional()
        .describe('required to change an existing PIN'),
    }),
    response: z.object({ pin_set: z.literal(true), updated_at: Timestamp }),
    errors: ['member_token_required', 'invalid_member_token', 'pin_required', 'invalid_pin', 'pin_locked'],
  },
});

// ---- provisioning (operator API under /admin/v1): cards and rewards ------------------------------

const admin = {
  service: 'ledger',
  scope: null,
  memberToken: false,
  idempotent: false,
  tag: 'Provisioning (operator)',
} as const;

/** A percentage with at most four decimals, e.g. 5 or 2.5. */
const Percentage = decimalNumber(4).pipe(z.number().min(0).max(100));
/** Points per unit of currency, with at most six decimals (0.1 = one point per 10 spent). */
const PointsRatio = decimalNumber(6).pipe(z.number().min(0.000001, 'must be at least 0.000001').max(1_000_000));
const BonusPoints = z.number().int().min(0).max(1_000_000_000);

const CashbackConfigInput = z.object({
  cashback_percentage: Percentage,
  cashback_min_amount: Money.default(0),
  cashback_max_amount: Money.nullable().default(null).describe('null: no cap'),
  allows_pin_redemption: z.boolean().default(false),
});

/** Settings every card has, whatever its reward system (the referral and claims services read them). */
const cardSettings = {
  time_zone: Text.trim()
    .min(1)
    .max(64)
    .describe('IANA time zone name (e.g. Europe/Lisbon) used by the earning rules; 422 invalid_time_zone when unknown'),
  referrer_bonus: BonusPoints,
  referee_bonus: BonusPoints,
  referral_bonus_on_first_purchase: z.boolean(),
  claim_lifetime_hours: z
    .number()
    .int()
    .min(1)
    .max(24 * 365),
  expiry_days: z
    .number()
    .int()
    .min(1)
    .max(36_500)
    .nullable()
    .describe("credits (of the card's unit) expire this many days after they become available; null: never"),
  pending_days: z
    .number()
    .int()
    .min(0)
    .max(3_650)
    .describe('credits from purchases become spendable this many days after the earn (the return window)'),
  expiry_warning_days: z
    .number()
    .int()
    .min(0)
    .max(3_650)
    .describe('the member is mailed this many days before credits expire'),
  transfers_enabled: z.boolean().describe('members may transfer points to each other on this card (points cards)'),
  transfer_monthly_cap: z
    .number()
    .int()
    .min(1)
    .max(1_000_000_000)
    .nullable()
    .describe("points a member may send per calendar month (the card's time zone); null: no cap"),
  point_value: decimalNumber(6)
    .pipe(z.number().min(0).max(1_000_000))
    .nullable()
    .describe("points cards: what one point is worth in the card's currency (the report's liability); null: not set"),
};

export const CardRecord = z
  .object({
    id: Id,
    tenant_id: Id,
    unique_identifier: z.string(),
    name: z.string(),
    description: z.string(),
    reward_system: z.enum(['cashback', 'points']),
    currency: z.string(),
    cashback_config: CashbackConfig.nullable().describe('cashback cards only'),
    points_ratio: z.number().nullable().describe('points cards only'),
    referrer_bonus: z.number().int(),
    referee_bonus: z.number().int(),
    referral_bonus_on_first_purchase: z.boolean(),
    claim_lifetime_hours: z.number().int(),
    expiry_days: z.number().int().nullable().describe('null: credits never expire'),
    pending_days: z.number().int(),
    expiry_warning_days: z.number().int(),
    transfers_enabled: z.boolean().describe('members may transfer points to each other (off by default)'),
    transfer_monthly_cap: z
      .number()
      .int()
      .nullable()
      .describe('points a member may send per calendar month; null: no cap'),
    time_zone: z.string().describe('IANA time zone of the earning rules (days, weeks, times of day)'),
    point_value: z.number().nullable().describe("what one point is worth in the card's currency; null: not set"),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Card' });

export const RewardRecord = z
  .object({
    id: Id,
    card_id: Id,
    name: z.string(),
    description: z.string(),
    points_cost: z.number().int(),
    active: z.boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Reward' });

const TenantParams = z.object({ tenant_id: IdParam });
const CardParams = z.object({ tenant_id: IdParam, card_id: IdParam });
const RewardParams = z.object({ tenant_id: IdParam, card_id: IdParam, reward_id: IdParam });
const Identifier = Text.trim().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - only, at most 64');

export const ledgerAdminOperations = defineOperations({
  'admin.card.create': {
    ...admin,
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/cards',
    operation: 'admin.card.create',
    summary:
      'Create a cashback card (cashback_config) or a points card (points_ratio), with referral bonuses and claim lifetime',
    params: TenantParams,
    body: z
      .object({
        name: Text.trim().min(1).max(200),
        description: Text.trim().max(2000).default(''),
        unique_identifier: Identifier.optional().describe('generated when absent; unique per tenant'),
        reward_system: z.enum(['cashback', 'points']),
        currency: Text.trim()
          .toUpperCase()
          .regex(/^[A-Z]{3}$/, 'must be a 3-letter ISO 4217 code')
          .default('USD'),
        cashback_config: CashbackConfigInput.optional(),
        points_ratio: PointsRatio.optional(),
        referrer_bonus: cardSettings.referrer_bonus.default(0),
        referee_bonus: cardSettings.referee_bonus.default(0),
        referral_bonus_on_first_purchase: cardSettings.referral_bonus_on_first_purchase.default(false),
        claim_lifetime_hours: cardSettings.claim_lifetime_hours.default(72),
        expiry_days: cardSettings.expiry_days.default(null),
        pending_days: cardSettings.pending_days.default(0),
        expiry_warning_days: cardSettings.expiry_warning_days.default(14),
        transfers_enabled: cardSettings.transfers_enabled.default(false),
        transfer_monthly_cap: cardSettings.transfer_monthly_cap.default(null),
        time_zone: cardSettings.time_zone.default('UTC'),
        point_value: cardSettings.point_value.default(null),
      })
      .refine((b) => b.reward_system !== 'cashback' || b.cashback_config !== undefined, {
        message: 'is required for a cashback card',
        path: ['cashback_config'],
      })
      .refine((b) => b.reward_system !== 'points' || b.points_ratio !== undefined, {
        message: 'is required for a points card',
        path: ['points_ratio'],
      })
      .refine((b) => b.reward_system !== 'points' || b.cashback_config === undefined, {
        message: 'only for a cashback card',
        path: ['cashback_config'],
      })
      .refine((b) => b.reward_system !== 'cashback' || b.points_ratio === undefined, {
        message: 'only for a points card',
        path: ['points_ratio'],
      }),
    response: z.object({ card: CardRecord }),
    errors: [
      'invalid_operator_token',
      'tenant_not_found',
      'card_identifier_taken',
      'invalid_time_zone',
      'wrong_card_type',
    ],
  },
  'admin.card.update': {
    ...admin,
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/cards/:card_id',
    operation: 'admin.card.update',
    summary:
      'Change some settings of a card (fields left out keep their value; the reward system cannot change; expiry and pending settings apply to credits made after the change)',
    params: CardParams,
    body: z
      .object({
        name: Text.trim().min(1).max(200).optional(),
        description: Text.trim().max(2000).optional(),
        currency: Text.trim()
          .toUpperCase()
          .regex(/^[A-Z]{3}$/, 'must be a 3-letter ISO 4217 code')
          .optional(),
        cashback_config: CashbackConfigInput.partial().strict().optional(),
        points_ratio: PointsRatio.optional(),
        referrer_bonus: cardSettings.referrer_bonus.optional(),
        referee_bonus: cardSettings.referee_bonus.optional(),
        referral_bonus_on_first_purchase: cardSettings.referral_bonus_on_first_purchase.optional(),
        claim_lifetime_hours: cardSettings.claim_lifetime_hours.optional(),
        expiry_days: cardSettings.expiry_days.optional(),
        pending_days: cardSettings.pending_days.optional(),
        expiry_warning_days: cardSettings.expiry_warning_days.optional(),
        transfers_enabled: cardSettings.transfers_enabled.optional(),
        transfer_monthly_cap: cardSettings.transfer_monthly_cap.optional(),
        time_zone: cardSettings.time_zone.optional(),
        point_value: cardSettings.point_value.optional(),
      })
      .strict(),
    response: z.object({ card: CardRecord }),
    errors: ['invalid_operator_token', 'card_not_found', 'wrong_card_type', 'invalid_time_zone'],
  },
  'admin.card.list': {
    ...admin,
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/cards',
    operation: 'admin.card.list',
    summary: "List a tenant's cards",
    params: TenantParams,
    response: z.object({ cards: z.array(CardRecord), total: z.number().int() }),
    errors: ['invalid_operator_token'],
  },
  'admin.card.get': {
    ...admin,
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/cards/:card_id',
    operation: 'admin.card.get',
    summary: 'One card with its rewards',
    params: CardParams,
    response: z.object({ card: CardRecord, rewards: z.array(RewardRecord) }),
    errors: ['invalid_operator_token', 'card_not_found'],
  },
  'admin.reward.create': {
    ...admin,
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/cards/:card_id/rewards',
    operation: 'admin.reward.create',
    summary: 'Add a reward to a points card',
    params: CardParams,
    body: z.object({
      name: Text.trim().min(1).max(200),
      description: Text.trim().max(2000).default(''),
      points_cost: z.number().int().positive().max(1_000_000_000),
      active: z.boolean().default(true),
    }),
    response: z.object({ reward: RewardRecord }),
    errors: ['invalid_operator_token', 'card_not_found', 'wrong_card_type'],
  },
  'admin.reward.update': {
    ...admin,
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/cards/:card_id/rewards/:reward_id',
    operation: 'admin.reward.update',
    summary: 'Change a reward (e.g. active: false withdraws it from redemption and claims)',
    params: RewardParams,
    body: z
      .object({
        name: Text.trim().min(1).max(200).optional(),
        description: Text.trim().max(2000).optional(),
        points_cost: z.number().int().positive().max(1_000_000_000).optional(),
        active: z.boolean().optional(),
      })
      .strict(),
    response: z.object({ reward: RewardRecord }),
    errors: ['invalid_operator_token', 'card_not_found', 'reward_not_found'],
  },
  'admin.reward.list': {
    ...admin,
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/cards/:card_id/rewards',
    operation: 'admin.reward.list',
    summary: "List a card's rewards",
    params: CardParams,
    response: z.object({ rewards: z.array(RewardRecord), total: z.number().int() }),
    errors: ['invalid_operator_token', 'card_not_found'],
  },
});
