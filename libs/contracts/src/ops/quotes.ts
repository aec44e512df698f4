import { z } from 'zod';
import { Id, Metadata, Money, PositiveMoney, Text, Timestamp } from '../common.ts';
import { memberFields, memberRequired, memberRule, needsMember, Reference } from './member-ref.ts';
import { earnRuleFields, RefundLineItems, ruleQuoteFields, simulationFields } from './rules.ts';
import { defineOperations } from './types.ts';

/**
 * Quotes: what an earn, a redemption or a refund would do now (amounts, the new
 * balances, warnings) without changing anything. The body is the operation's own body plus
 * `operation`; a redemption's member is named like an earn's (no member token: a quote moves
 * nothing). A request the operation would refuse as malformed or unknown (card, member, reward)
 * is refused the same way; a business rule that would refuse it (not enough points, an inactive
 * reward, a duplicate reference...) answers `would_succeed: false` with the rule as a warning.
 */
const member = { ...memberFields };
const memberName = Text.trim().min(1).max(200).optional();

export const QuoteWarning = z
  .object({
    code: z.enum([
      'insufficient_points',
      'insufficient_balance',
      'reward_inactive',
      'member_inactive',
      'duplicate_reference',
      'refund_reference_mismatch',
      'line_items_mismatch',
      'balance_limit_exceeded',
      'pin_required',
    ]),
    message: z.string(),
    requested: z.number().optional().describe('insufficient_balance: the deduction asked for'),
    deducted: z.number().optional().describe('insufficient_balance: what the balance covers'),
    uncovered: z.number().optional().describe('insufficient_balance: requested minus deducted'),
  })
  .meta({ id: 'QuoteWarning' });
export type QuoteWarning = z.infer<typeof QuoteWarning>;

const quoteCommon = {
  card_id: Id,
  member_id: Id.nullable().describe('null: an earn for a member who does not exist yet (the earn would create it)'),
  is_new_member: z.boolean(),
  would_succeed: z.boolean().describe('false: a warning names the rule that would refuse the operation'),
  available_at: Timestamp.nullable().describe('earn: when the credit would become spendable'),
  expires_at: Timestamp.nullable().describe('earn: when the credit would expire (null: never)'),
  warnings: z.array(QuoteWarning),
};

const earnQuote = {
  operation: z.literal('earn'),
  card_id: Id,
  ...member,
  member_name: memberName,
  purchase_amount: PositiveMoney,
  reference: Reference.optional(),
  metadata: Metadata.optional(),
  ...earnRuleFields,
  ...simulationFields,
};
const redeemQuote = { operation: z.literal('redeem'), card_id: Id, ...member, reference: Reference.optional() };
const refundQuote = {
  operation: z.literal('refund'),
  card_id: Id,
  ...member,
  refund_amount: PositiveMoney,
  reference: Reference.optional(),
  line_items: RefundLineItems.optional().describe(
    'the lines of the purchase (named by reference) refunded: the quote takes back what they earned, bonuses included',
  ),
};
const lineItemsNeedReference = (b: { line_items?: unknown; reference?: string }) =>
  b.line_items === undefined || b.reference !== undefined;
const lineItemsRule = { message: 'is required with line_items (the purchase refunded)', path: ['reference'] };
const DESCRIPTION = 'the body of the earn, redemption or refund, with `operation` naming which';

export const PointsQuoteBody = z
  .discriminatedUnion('operation', [
    z.object(earnQuote).refine(needsMember, memberRule).meta({ anyOf: memberRequired }),
    z
      .object({ ...redeemQuote, reward_id: Id })
      .refine(needsMember, memberRule)
      .meta({ anyOf: memberRequired }),
    z
      .object({ ...refundQuote, points_to_deduct: z.number().int().min(0).max(1_000_000_000).optional() })
      .refine(needsMember, memberRule)
      .refine(lineItemsNeedReference, lineItemsRule)
      .meta({ anyOf: memberRequired }),
  ])
  .describe(DESCRIPTION);

export const CashbackQuoteBody = z
  .discriminatedUnion('operation', [
    z.object(earnQuote).refine(needsMember, memberRule).meta({ anyOf: memberRequired }),
    z
      .object({ ...redeemQuote, amount: PositiveMoney })
      .refine(needsMember, memberRule)
      .meta({ anyOf: memberRequired }),
    z
      .object({ ...refundQuote, cashback_to_deduct: Money.optional() })
      .refine(needsMember, memberRule)
      .refine(lineItemsNeedReference, lineItemsRule)
      .meta({ anyOf: memberRequired }),
  ])
  .describe(DESCRIPTION);

export const quoteOperations = defineOperations({
  'points.quote': {
    service: 'ledger',
    tag: 'Points',
    method: 'POST',
    path: '/api/v1/loyalty/points/quote',
    operation: 'points.quote',
    scope: 'points_read',
    memberToken: false,
    idempotent: false,
    summary: 'What an earn, a redemption or a refund would do now (points, new balances, warnings), changing nothing',
    body: PointsQuoteBody,
    response: z
      .object({
        operation: z.enum(['earn', 'redeem', 'refund']),
        ...quoteCommon,
        points: z.number().int().describe('points the operation would earn, redeem or deduct'),
        points_balance: z.number().int().describe('spendable now'),
        new_balance: z.number().int().describe('spendable after the operation'),
        pending_points: z.number().int().describe('pending now'),
        new_pending_points: z.number().int().describe('pending after the operation'),
        reward_id: Id.optional().describe('redeem'),
        reward_name: z.string().optional().describe('redeem'),
        ...ruleQuoteFields,
      })
      .meta({ id: 'PointsQuote' }),
    errors: [
      'card_not_found',
      'member_not_found',
      'reward_not_found',
      'wrong_card_type',
      'line_items_mismatch',
      'rule_not_found',
    ],
  },
  'cashback.quote': {
    service: 'ledger',
    tag: 'Cashback',
    method: 'POST',
    path: '/api/v1/cashback/cashback/quote',
    operation: 'cashback.quote',
    scope: 'cashback_read',
    memberToken: false,
    idempotent: false,
    summary:
      'What an earn, a redemption or a refund would do now (cashback, new balances, warnings), changing nothing; the PIN is not checked',
    body: CashbackQuoteBody,
    response: z
      .object({
        operation: z.enum(['earn', 'redeem', 'refund']),
        ...quoteCommon,
        amount: z.number().describe('cashback the operation would earn, redeem or deduct'),
        cashback_balance: z.number().describe('spendable now'),
        new_balance: z.number().describe('spendable after the operation'),
        pending_cashback: z.number().describe('pending now'),
        new_pending_cashback: z.number().describe('pending after the operation'),
        cashback_percentage: z.number().optional().describe('earn'),
        currency: z.string(),
        ...ruleQuoteFields,
      })
      .meta({ id: 'CashbackQuote' }),
    errors: ['card_not_found', 'member_not_found', 'wrong_card_type', 'line_items_mismatch', 'rule_not_found'],
  },
});
