import * as z from 'zod';
import { Id, IdParam, Text } from '../common.ts';
import { Job } from './jobs.ts';
import { defineOperations } from './types.ts';

/**
 * Programme reports of a card (owned by the ledger): what was issued, redeemed, expired and
 * refunded per day, week or month of the card's time zone, the outstanding balance and its value,
 * from rollups the ledger keeps as it writes its journal (never a scan of the journal).
 */
const LocalDay = Text.regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD').describe(
  "a day of the card's time zone, YYYY-MM-DD (years 0001 to 9999, taken as they are)",
);

export const ReportQuery = z.object({
  card_id: IdParam,
  from: LocalDay.optional().describe("first day (card's time zone); default: 29 days before `to`"),
  to: LocalDay.optional().describe("last day, included (card's time zone); default: today"),
  granularity: z.enum(['day', 'week', 'month']).default('day').describe('weeks start on Monday'),
});

const Amount = z.number().describe("in the card's unit: points, or currency units for a cashback card");

export const ReportFigures = z.object({
  issued: Amount.describe('credited: earns, bonuses, referral bonuses, imported balances'),
  redeemed: Amount.describe('spent: redemptions and reward claims'),
  expired: Amount,
  refunded: Amount.describe('taken back by refunds of purchases'),
  adjusted: Amount.describe('staff adjustments and other movements (signed)'),
  active_members: z
    .number()
    .int()
    .describe('members with at least one transaction on the card (an imported balance is not one)'),
});

export const ProgrammeReport = z
  .object({
    card_id: Id,
    reward_system: z.enum(['cashback', 'points']),
    currency: z.string(),
    time_zone: z.string(),
    from: z.string(),
    to: z.string(),
    granularity: z.enum(['day', 'week', 'month']),
    periods: z.array(
      z.object({ start: z.string().describe('first day of the period (YYYY-MM-DD)'), ...ReportFigures.shape }),
    ),
    totals: z.object({
      ...ReportFigures.shape,
      breakage: z.number().nullable().describe('expired ÷ issued over the range; null when nothing was issued'),
      redemption_rate: z.number().nullable().describe('redeemed ÷ issued over the range; null when nothing was issued'),
    }),
    outstanding: z.object({
      balance: Amount.describe('what members hold at the end of `to` (spendable, pending and held)'),
      liability: z
        .number()
        .nullable()
        .describe(
          "its value in the card's currency (points × the card's point_value); null when point_value is not set",
        ),
      point_value: z.number().nullable(),
    }),
    top_rewards: z
      .array(z.object({ reward_id: Id, name: z.string(), redemptions: z.number().int(), amount: Amount }))
      .describe('the 10 rewards redeemed most often in the range'),
  })
  .meta({ id: 'ProgrammeReport' });

export const reportOperations = defineOperations({
  'cards.report': {
    service: 'ledger',
    scope: 'programme_manage',
    memberToken: false,
    idempotent: false,
    tag: 'Reports',
    method: 'GET',
    path: '/api/v1/loyalty/cards/:card_id/report',
    operation: 'cards.report',
    summary:
      "A card's programme report per day, week or month of its time zone: issued, redeemed, expired, refunded, active members, outstanding balance and liability, breakage, redemption rate, top rewards",
    params: z.object({ card_id: IdParam }),
    query: ReportQuery.omit({ card_id: true }),
    response: ProgrammeReport,
    errors: ['card_not_found'],
  },
});

export const reportAdminOperations = defineOperations({
  'admin.reports.rebuild': {
    service: 'ledger',
    scope: null,
    memberToken: false,
    idempotent: false,
    tag: 'Reports (operator)',
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/reports/rebuild',
    operation: 'admin.reports.rebuild',
    summary:
      "Rebuild the report rollups of a tenant's cards (or one card) from the journal, as a job (after a card's time zone changed, or to check them)",
    params: z.object({ tenant_id: IdParam }),
    body: z.object({ card_id: Id.optional().describe('only this card') }),
    response: z.object({ job: Job }),
    errors: ['invalid_operator_token', 'tenant_not_found', 'card_not_found'],
  },
});
