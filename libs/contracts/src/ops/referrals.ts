import * as z from 'zod';
import { countParam, Id, IdParam, Text, Timestamp, pageQuery } from '../common.ts';
import { defineOperations } from './types.ts';

/**
 * Referral programme, served by services/referrals. Methods and scopes
 * are not shown by the document; the platform's choice: reads are GET with points_read, validate
 * is a POST with points_read (it changes nothing), apply is a POST with points_write.
 */
const base = { service: 'referrals', memberToken: false, tag: 'Referrals' } as const;

export const referralPeriods = ['7d', '30d', '90d', 'all'] as const;
export const ReferralPeriod = z.enum(referralPeriods);
export type ReferralPeriod = z.infer<typeof ReferralPeriod>;

/** Codes are compared case-insensitively; spaces and hyphens typed by people are ignored. */
export const ReferralCodeInput = Text.trim()
  .min(1)
  .max(32)
  .transform((v) => v.replace(/[\s-]/g, '').toUpperCase());

const CardParams = z.object({ card_id: IdParam });
const CardMemberParams = z.object({ card_id: IdParam, member_id: IdParam });
const PeriodQuery = z.object({ period: ReferralPeriod.default('all') });

export const ReferralStats = z
  .object({
    total_referrals: z.number().int(),
    successful_referrals: z.number().int(),
    pending_referrals: z.number().int(),
    conversion_rate: z.number().describe('successful / total x 100, two decimals; 0 when there are none'),
  })
  .meta({ id: 'ReferralStats' });

export const AppliedReferral = z
  .object({
    id: Id,
    referrer_id: Id,
    referee_id: Id,
    referrer_bonus: z.number().int(),
    referee_bonus: z.number().int(),
    status: z
      .enum(['pending', 'completed'])
      .describe("pending while the bonuses wait for the referee's first purchase"),
    created_at: Timestamp,
  })
  .meta({ id: 'Referral' });

export const ReferralOfReferrer = z
  .object({
    id: Id,
    referee_name: z.string(),
    referee_email: z.string().nullable().describe('masked; null when the member has no email'),
    status: z.enum(['pending', 'completed']),
    bonus_points: z.number().int().describe("the referrer's bonus for this referral"),
    created_at: Timestamp,
  })
  .meta({ id: 'ReferralOfReferrer' });

export const TopReferrer = z
  .object({
    member_id: Id,
    name: z.string(),
    email: z.string().nullable().describe('masked; null when the member has no email'),
    total_referrals: z.number().int(),
    successful_referrals: z.number().int(),
  })
  .meta({ id: 'TopReferrer' });

export const referralOperations = defineOperations({
  'referrals.code.get': {
    ...base,
    method: 'GET',
    path: '/api/v1/loyalty/cards/:card_id/members/:member_id/referral-code',
    operation: 'referrals.code.get',
    scope: 'points_read',
    idempotent: false,
    summary: "The member's referral code for the card, created on first request",
    params: CardMemberParams,
    response: z.object({ referral_code: z.string(), card_id: Id, member_id: Id }),
    errors: ['card_not_found', 'member_not_found', 'wrong_card_type'],
  },
  'referrals.stats': {
    ...base,
    method: 'GET',
    path: '/api/v1/loyalty/cards/:card_id/referral-stats',
    operation: 'referrals.stats',
    scope: 'points_read',
    idempotent: false,
    summary: 'Referral statistics of a card for a period (by referral creation time)',
    params: CardParams,
    query: PeriodQuery,
    response: z.object({ stats: ReferralStats, period: ReferralPeriod }),
    errors: ['card_not_found', 'wrong_card_type'],
  },
  'referrals.top_referrers': {
    ...base,
    method: 'GET',
    path: '/api/v1/loyalty/cards/:card_id/referrers',
    operation: 'referrals.top_referrers',
    scope: 'points_read',
    idempotent: false,
    summary: 'Top referrers of a card, by successful referrals, then total, then member id',
    params: CardParams,
    query: PeriodQuery.extend({ limit: countParam(1, 100).default(10) }),
    response: z.object({
      referrers: z.array(TopReferrer),
      total: z.number().int().describe('referrers with at least one referral in the period'),
    }),
    errors: ['card_not_found', 'wrong_card_type'],
  },
  'referrals.of_referrer': {
    ...base,
    method: 'GET',
    path: '/api/v1/loyalty/cards/:card_id/referrers/:member_id/referrals',
    operation: 'referrals.of_referrer',
    scope: 'points_read',
    idempotent: false,
    summary: 'Referrals made by one referrer on a card, newest first',
    params: CardMemberParams,
    query: z.object(pageQuery(20, 100)),
    response: z.object({ referrals: z.array(ReferralOfReferrer), total: z.number().int() }),
    errors: ['card_not_found', 'member_not_found', 'wrong_card_type'],
  },
  'referrals.validate_code': {
    ...base,
    method: 'POST',
    path: '/api/v1/loyalty/referrals/validate-code',
    operation: 'referrals.validate_code',
    scope: 'points_read',
    idempotent: false,
    summary: 'Check a referral code for a card; is_valid false for an unknown code or a code of another card',
    body: z.object({ referral_code: ReferralCodeInput, card_id: Id }),
    response: z.object({
      is_valid: z.boolean(),
      referrer: z
        .object({
          id: Id,
          name: z.string(),
          bonus_info: z.object({ referrer_bonus: z.number().int(), referee_bonus: z.number().int() }),
        })
        .nullable()
        .describe('null when the code is not valid'),
    }),
    errors: [],
  },
  'referrals.apply': {
    ...base,
    method: 'POST',
    path: '/api/v1/loyalty/referrals/apply',
    operation: 'referrals.apply',
    scope: 'points_write',
    idempotent: true,
    summary:
      'Apply a referral code to a member; both parties receive their bonus points (at once, or on the first purchase when the card says so)',
    body: z.object({ referral_code: ReferralCodeInput, card_id: Id, referee_member_id: Id }),
    response: z.object({ referral: AppliedReferral }),
    topLevelMessage: true,
    errors: [
      'referral_code_not_found',
      'member_not_found',
      'card_not_found',
      'referral_already_applied',
      'self_referral',
      'wrong_card_type',
      'idempotency_key_reused',
    ],
  },
});
