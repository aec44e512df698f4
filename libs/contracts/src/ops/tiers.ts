import * as z from 'zod';
import { Id, IdParam, Text, Timestamp } from '../common.ts';
import { JobId } from './jobs.ts';
import { defineOperations } from './types.ts';

/**
 * Tiers of a card (bronze, silver, gold): the ladder, how members qualify (a metric summed over a
 * window in the card's time zone), and each member's tier. The ledger owns them (an earn decides
 * an upgrade in its own transaction). Fields whose meaning depends on others (ranks, thresholds,
 * the window) are checked by the ledger and answered 422 `invalid_tiers` naming each field, so the
 * structure here stays loose on purpose.
 */

/** A member's tier as balance answers carry it (only on cards with tiers). */
export const TierBadge = z
  .object({
    name: z.string(),
    rank: z.number().int(),
    valid_until: Timestamp.nullable().describe('when the tier is reviewed (downgrade or renewal); null: no end'),
  })
  .meta({ id: 'TierBadge' });

/** What an earn on a card with tiers adds: the tier after the earn, and whether this earn upgraded it. */
export const EarnTier = z
  .object({
    name: z.string(),
    rank: z.number().int(),
    valid_until: Timestamp.nullable(),
    upgraded: z.boolean().describe('this earn crossed an entry threshold and moved the member up'),
  })
  .meta({ id: 'EarnTier' });

export const TierInput = z
  .object({
    name: Text.trim().min(1).max(100),
    rank: z.number().describe('a whole number, unique in the ladder; higher is better'),
    entry_threshold: z
      .number()
      .describe('qualifying total that reaches the tier (points, or currency units); 0 for the lowest tier'),
    retain_threshold: z
      .number()
      .describe('qualifying total over the window that keeps the tier at its review; at most entry_threshold'),
    description: Text.trim().max(500).optional(),
  })
  .meta({ id: 'TierInput' });

export const TierSettingsInput = z
  .object({
    tiers: z
      .array(TierInput)
      .max(100)
      .describe('at most 10; an empty list turns tiers off for the card (members keep nothing)'),
    metric: Text.max(40)
      .default('points_earned')
      .describe(
        'points_earned (earned minus refunded; cashback earned on a cashback card) or amount_spent (purchases minus refunds)',
      ),
    count_bonuses: z
      .boolean()
      .default(true)
      .describe('points_earned: whether bonuses (earning rules beyond the base, referrals, adjustments) count'),
    window: Text.max(40)
      .default('rolling')
      .describe("rolling (window_days), calendar_year, anniversary (the member's join date) or lifetime"),
    window_days: z.number().default(365).describe('rolling windows: their length in days (1 to 3660)'),
    validity_days: z
      .number()
      .nullable()
      .default(null)
      .describe('an upgrade holds this many days; null: until the end of the next full window'),
    warning_days: z.number().default(30).describe('days before a downgrade the member is warned (0 to 365)'),
  })
  .meta({ id: 'TierSettingsInput' });

export const TierRecord = z
  .object({
    name: z.string(),
    rank: z.number().int(),
    entry_threshold: z.number(),
    retain_threshold: z.number(),
    description: z.string().nullable(),
    members: z.number().int().describe('members holding the tier now'),
  })
  .meta({ id: 'Tier' });

export const TierSettings = z
  .object({
    card_id: Id,
    time_zone: z.string(),
    enabled: z.boolean().describe('false: the card has no tiers'),
    tiers: z.array(TierRecord).describe('lowest rank first'),
    metric: z.string(),
    count_bonuses: z.boolean(),
    window: z.string(),
    window_days: z.number().int(),
    validity_days: z.number().int().nullable(),
    warning_days: z.number().int(),
    version: z.number().int().describe('0: never set'),
    updated_at: Timestamp.nullable(),
  })
  .meta({ id: 'TierSettings' });

export const TierSettingsAnswer = TierSettings.extend({
  recompute_job_id: JobId.nullable().describe(
    'the job recomputing every member of the card (GET /api/v1/jobs/{job_id}); null when nothing changed',
  ),
});

export const MemberTier = z
  .object({
    card_id: Id,
    member_id: Id,
    tier: z.object({ name: z.string(), rank: z.number().int(), description: z.string().nullable() }),
    valid_until: Timestamp.nullable().describe('when the tier is reviewed; null: no end'),
    manual: z
      .object({ reason: z.string() })
      .nullable()
      .describe('set by hand (staff or the operator) until valid_until'),
    metric: z.string(),
    qualifying_total: z.number().describe('points, or currency units, in the current window'),
    window_start: z.string().nullable().describe('first day of the current window (card time zone); null: lifetime'),
    window_end: z.string().nullable().describe('day after its last day; null: lifetime'),
    next_tier: z
      .object({ name: z.string(), rank: z.number().int(), entry_threshold: z.number() })
      .nullable()
      .describe('null: the member holds the highest tier'),
    needed_for_next: z.number().nullable().describe('what the current window still needs to reach next_tier'),
    needed_to_retain: z
      .number()
      .nullable()
      .describe(
        'what the window judged at valid_until still needs to keep the tier; null: nothing to keep (lowest tier, no end)',
      ),
  })
  .meta({ id: 'MemberTier' });

export const ManualTierInput = z
  .object({
    tier: Text.trim().min(1).max(100).describe('the name of a tier of the card'),
    valid_until: Text.max(64).describe(
      'when the tier is reviewed as any other (ISO timestamp with its offset, in the future)',
    ),
    reason: Text.trim().min(1).max(500),
  })
  .meta({ id: 'ManualTierInput' });

const CardParams = z.object({ card_id: IdParam });
const MemberParams = z.object({ card_id: IdParam, member_id: IdParam });
const common = { service: 'ledger', memberToken: false, tag: 'Tiers' } as const;

export const tierOperations = defineOperations({
  'tiers.get': {
    ...common,
    scope: 'programme_manage',
    method: 'GET',
    path: '/api/v1/loyalty/cards/:card_id/tiers',
    operation: 'tiers.get',
    idempotent: false,
    summary: "A card's tier ladder and qualification settings, with the members in each tier",
    params: CardParams,
    response: TierSettings,
    errors: ['card_not_found'],
  },
  'tiers.put': {
    ...common,
    scope: 'programme_manage',
    method: 'PUT',
    path: '/api/v1/loyalty/cards/:card_id/tiers',
    operation: 'tiers.put',
    idempotent: false,
    summary:
      "Set a card's tier ladder and qualification settings (the whole of them); a change recomputes every member in a job",
    params: CardParams,
    body: TierSettingsInput,
    response: TierSettingsAnswer,
    errors: ['card_not_found', 'invalid_tiers'],
  },
  'tiers.member': {
    ...common,
    scope: 'card_read',
    method: 'GET',
    path: '/api/v1/loyalty/cards/:card_id/members/:member_id/tier',
    operation: 'tiers.member',
    idempotent: false,
    summary: "A member's tier on a card and the progress to the next one",
    params: MemberParams,
    response: MemberTier,
    errors: ['card_not_found', 'member_not_found', 'tiers_not_configured'],
  },
});

// ---- the same in the operator API (tenant in the path) ----------------------------------------

const admin = {
  service: 'ledger',
  scope: null,
  memberToken: false,
  idempotent: false,
  tag: 'Tiers (operator)',
} as const;
const AdminCardParams = z.object({ tenant_id: IdParam, card_id: IdParam });
const AdminMemberParams = z.object({ tenant_id: IdParam, card_id: IdParam, member_id: IdParam });

export const tierAdminOperations = defineOperations({
  'admin.tiers.get': {
    ...admin,
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/cards/:card_id/tiers',
    operation: 'admin.tiers.get',
    summary: "A card's tier ladder and qualification settings",
    params: AdminCardParams,
    response: TierSettings,
    errors: ['invalid_operator_token', 'card_not_found'],
  },
  'admin.tiers.put': {
    ...admin,
    method: 'PUT',
    path: '/admin/v1/tenants/:tenant_id/cards/:card_id/tiers',
    operation: 'admin.tiers.put',
    summary: "Set a card's tier ladder and qualification settings",
    params: AdminCardParams,
    body: TierSettingsInput,
    response: TierSettingsAnswer,
    errors: ['invalid_operator_token', 'card_not_found', 'invalid_tiers'],
  },
  'admin.tiers.member': {
    ...admin,
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/cards/:card_id/members/:member_id/tier',
    operation: 'admin.tiers.member',
    summary: "A member's tier on a card",
    params: AdminMemberParams,
    response: MemberTier,
    errors: ['invalid_operator_token', 'card_not_found', 'member_not_found', 'tiers_not_configured'],
  },
  'admin.tiers.set': {
    ...admin,
    method: 'PUT',
    path: '/admin/v1/tenants/:tenant_id/cards/:card_id/members/:member_id/tier',
    operation: 'admin.tiers.set',
    summary: "Set a member's tier by hand, with an expiry and a reason (audited)",
    params: AdminMemberParams,
    body: ManualTierInput,
    response: MemberTier,
    errors: [
      'invalid_operator_token',
      'card_not_found',
      'member_not_found',
      'tiers_not_configured',
      'tier_not_found',
      'invalid_tiers',
    ],
  },
});

// ---- the staff API (the console): managers configure and set by hand, staff read -----------------

const staffOp = (role: 'staff' | 'manager') =>
  ({ service: 'ledger', scope: null, memberToken: false, staffRole: role, tag: 'Staff: tiers' }) as const;

export const tierStaffOperations = defineOperations({
  'staff.tiers.get': {
    ...staffOp('staff'),
    method: 'GET',
    path: '/staff/v1/cards/:card_id/tiers',
    operation: 'staff.tiers.get',
    idempotent: false,
    summary: "A card's tier ladder and settings, with the members in each tier",
    params: CardParams,
    response: TierSettings,
    errors: ['card_not_found'],
  },
  'staff.tiers.put': {
    ...staffOp('manager'),
    method: 'PUT',
    path: '/staff/v1/cards/:card_id/tiers',
    operation: 'staff.tiers.put',
    idempotent: false,
    summary: "Set a card's tier ladder and qualification settings (managers)",
    params: CardParams,
    body: TierSettingsInput,
    response: TierSettingsAnswer,
    errors: ['card_not_found', 'invalid_tiers'],
  },
  'staff.tiers.member': {
    ...staffOp('staff'),
    method: 'GET',
    path: '/staff/v1/cards/:card_id/members/:member_id/tier',
    operation: 'staff.tiers.member',
    idempotent: false,
    summary: "A member's tier on a card and the progress to the next one",
    params: MemberParams,
    response: MemberTier,
    errors: ['card_not_found', 'member_not_found', 'tiers_not_configured'],
  },
  'staff.tiers.set': {
    ...staffOp('manager'),
    method: 'PUT',
    path: '/staff/v1/cards/:card_id/members/:member_id/tier',
    operation: 'staff.tiers.set',
    idempotent: false,
    summary: "Set a member's tier by hand, with an expiry and a reason (managers; audited)",
    params: MemberParams,
    body: ManualTierInput,
    response: MemberTier,
    errors: ['card_not_found', 'member_not_found', 'tiers_not_configured', 'tier_not_found', 'invalid_tiers'],
  },
});
