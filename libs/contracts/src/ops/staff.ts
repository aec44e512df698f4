import * as z from 'zod';
import { AUDIT_ANCHOR_TOKEN, AuditActor, StaffRole } from '../audit.ts';
import { Email, Id, IdParam, Money, Pagination, Phone, Text, Timestamp, countParam, pageQuery } from '../common.ts';
import { parseIsoTime } from '../time.ts';
import { ClaimRequestRecord, ClaimStatus } from './claims.ts';
import { CreateQuery, ImportParams, ImportRecord, importKindOwner, importOwner, importUpload } from './imports.ts';
import { Job } from './jobs.ts';
import { exportContentTypes, ExportParams, ExportQuery, exportOwner } from './exports.ts';
import { ConsentChanges, Consents, ConsentSource } from './members.ts';
import { ProgrammeReport, ReportQuery } from './reports.ts';
import { ReferralOfReferrer, ReferralPeriod, ReferralStats, TopReferrer } from './referrals.ts';
import { LineItems, RuleApplied, RuleInput, RuleRecord, RuleTraceEntry, Tags } from './rules.ts';
import { tierStaffOperations } from './tiers.ts';
import { mailTemplateStaffOperations } from './mail.ts';
import { defineOperations } from './types.ts';

/**
 * The staff API (`/staff/v1`), used by the staff console: staff users of a tenant sign in with a
 * mailed one-time code and act with a staff token (`Authorization: Bearer <token>`). `staffRole`
 * is the least role an operation needs (`manager` may do everything `staff` may); entries without
 * one are the sign-in operations. Every id is the caller's tenant's (a foreign id is not found).
 * Served from its own OpenAPI document (`/staff/openapi.json`).
 */
const signIn = { scope: null, memberToken: false, tag: 'Staff sign-in' } as const;
const staffOp = (tag: string, role: StaffRole = 'staff') =>
  ({ scope: null, memberToken: false, staffRole: role, tag }) as const;

export const StaffUser = z
  .object({
    id: Id,
    tenant_id: Id,
    email: z.string(),
    name: z.string(),
    role: StaffRole,
    active: z.boolean(),
    created_at: Timestamp,
    last_sign_in_at: Timestamp.nullable(),
  })
  .meta({ id: 'StaffUser' });

/** A member as staff see them at the counter (unmasked: staff looked them up by email or phone). */
export const StaffMemberView = z
  .object({
    id: Id,
    name: z.string(),
    email: z.string().nullable(),
    phone: z.string().nullable(),
    is_active: z.boolean(),
    created_at: Timestamp,
  })
  .meta({ id: 'StaffMemberView' });

/** One card's balance of a member. Pending, held and expiring amounts appear once the ledger keeps lots. */
export const CardBalance = z
  .object({
    card_id: Id,
    card_name: z.string(),
    reward_system: z.enum(['cashback', 'points']),
    currency: z.string(),
    points_balance: z.number().int().optional().describe('points cards: the spendable balance'),
    cashback_balance: z.number().optional().describe('cashback cards: the spendable balance'),
    pending_points: z.number().int().optional(),
    held_points: z.number().int().optional(),
    pending_cashback: z.number().optional(),
    held_cashback: z.number().optional(),
    next_expiries: z
      .array(z.object({ points: z.number().int().optional(), amount: z.number().optional(), expires_at: Timestamp }))
      .optional(),
  })
  .meta({ id: 'CardBalance' });

export const StaffCard = z
  .object({
    id: Id,
    name: z.string(),
    unique_identifier: z.string(),
    reward_system: z.enum(['cashback', 'points']),
    currency: z.string(),
  })
  .meta({ id: 'StaffCard' });

export const StaffHistoryEntry = z
  .object({
    id: Id,
    event: z.string(),
    points: z.number().int().describe('points cards; 0 on cashback cards'),
    amount: z.number().describe('cashback cards, in currency units; 0 on points cards'),
    created_at: Timestamp,
  })
  .meta({ id: 'StaffHistoryEntry' });

export const StaffClaimRequest = z
  .object({
    ...ClaimRequestRecord.shape,
    member_points_balance: z
      .number()
      .int()
      .nullable()
      .describe("the member's spendable points on the claim's card; null when the ledger did not answer"),
  })
  .meta({ id: 'StaffClaimRequest' });

export const AuditRow = z
  .object({
    seq: z.number().int().describe("position in the tenant's chain, from 1"),
    occurred_at: Timestamp,
    recorded_at: Timestamp,
    actor: AuditActor,
    action: z.string(),
    target: z.record(z.string(), z.union([z.number(), z.string()])),
    amounts: z.record(z.string(), z.number()),
    details: z
      .record(z.string(), z.unknown())
      .describe(
        "free text the actor gave and settings changed; `{}` once erased with a member's personal data (details_erased_at)",
      ),
    details_erased_at: Timestamp.nullable().describe(
      "when the details were erased with a member's personal data (chain_version 3 keeps them out of the hash, so the row still verifies); null while kept",
    ),
    request_id: z.string(),
    service: z.string().describe('the service that made the change'),
    prev_hash: z.string().describe('hash of the previous row of the tenant (64 zeros for the first)'),
    hash: z
      .string()
      .describe(
        'over this row and prev_hash: HMAC-SHA256 under the platform audit key (chain_version 2; 3 covers a keyed digest of the details instead of the details), or SHA-256 for rows written before the chain was keyed (1)',
      ),
    chain_version: z
      .number()
      .int()
      .describe(
        '3: keyed, details kept beside the chain (erasable); 2: keyed (HMAC-SHA256); 1: written before the chain was keyed (SHA-256)',
      ),
  })
  .meta({ id: 'AuditRow' });

export const AuditVerification = z
  .object({
    valid: z.boolean(),
    rows_checked: z.number().int(),
    head: z.object({ seq: z.number().int(), hash: z.string() }).describe('the chain head identity keeps'),
    problem: z
      .object({ seq: z.number().int(), reason: z.string() })
      .nullable()
      .describe('the first row that does not verify, and why'),
    legacy_rows: z
      .number()
      .int()
      .describe('rows written before the chain was keyed (SHA-256 only; they come first and verify as they are)'),
    keyed_from: z.number().int().nullable().describe('the first keyed row (HMAC-SHA256); null while there is none'),
    erased_details: z
      .number()
      .int()
      .describe("rows whose details were erased with a member's personal data: their hash still verifies"),
    anchors_checked: z
      .number()
      .int()
      .describe('signed anchors the chain was checked against: those identity stored, and the one given (anchor)'),
  })
  .meta({ id: 'AuditVerification' });

/** An anchor kept from the logs or an `audit.anchored` webhook (its `token`), to verify the chain against. */
const AnchorQuery = z.object({
  anchor: Text.trim()
    .regex(AUDIT_ANCHOR_TOKEN, "must be an anchor's token (v1.<tenant>.<seq>.<hash>.<time>.<key id>.<signature>)")
    .optional()
    .describe(
      "an anchor's `token` kept outside the platform (log line `audit chain anchored`, webhook `audit.anchored`): the chain must hold the row it names",
    ),
});

/** A day (`2026-03-14`) or an instant (ISO 8601 with its offset) in a query. */
const DateOrTime = Text.max(64).refine((v) => parseIsoTime(v) !== undefined, {
  message: 'must be a date (YYYY-MM-DD) or an ISO 8601 timestamp with its offset (2026-03-14T10:00:00Z)',
});
const MemberParams = z.object({ member_id: IdParam });
const RuleCardParams = z.object({ card_id: IdParam });
const RuleParams = z.object({ card_id: IdParam, rule_id: IdParam });
const RequestParams = z.object({ request_id: IdParam });
const Note = Text.trim().max(1000, 'must be at most 1000 characters');
const StaffName = Text.trim().min(1).max(200);

export const staffOperations = defineOperations({
  // ---- sign-in (identity) -------------------------------------------------------------------------
  'staff.auth.request_code': {
    ...signIn,
    service: 'identity',
    method: 'POST',
    path: '/staff/v1/auth/request-code',
    operation: 'staff.auth.request_code',
    idempotent: false,
    summary:
      'Mail a sign-in code to a staff user of the tenant (the same answer for an unknown email; sandbox tenants return the code)',
    body: z.object({ tenant_id: Id, email: Email }),
    response: z.object({
      message: z.string(),
      expires_in_minutes: z.number().int(),
      code: z.string().optional().describe('sandbox tenants only, for a known staff email'),
    }),
    errors: ['otp_cooldown', 'otp_hourly_limit', 'email_delivery_failed'],
  },
  'staff.auth.verify_code': {
    ...signIn,
    service: 'identity',
    method: 'POST',
    path: '/staff/v1/auth/verify-code',
    operation: 'staff.auth.verify_code',
    idempotent: false,
    summary: 'Verify a sign-in code and issue a staff token (valid 12 hours)',
    body: z.object({ tenant_id: Id, email: Email, code: Text.trim().regex(/^[0-9]{6}$/, 'must be the 6-digit code') }),
    response: z.object({
      staff_token: z.string(),
      expires_at: Timestamp,
      expires_in_minutes: z.number().int(),
      staff: StaffUser,
    }),
    errors: ['invalid_otp', 'otp_expired', 'otp_attempts_exceeded', 'tenant_inactive'],
  },
  'staff.auth.logout': {
    ...staffOp('Staff sign-in'),
    service: 'identity',
    method: 'POST',
    path: '/staff/v1/auth/logout',
    operation: 'staff.auth.logout',
    idempotent: false,
    summary: 'End the presented staff session at once (on every gateway replica)',
    response: z.object({ message: z.string() }),
    errors: [],
  },
  'staff.me': {
    ...staffOp('Staff sign-in'),
    service: 'identity',
    method: 'GET',
    path: '/staff/v1/me',
    operation: 'staff.me',
    idempotent: false,
    summary: 'The signed-in staff user and their tenant',
    response: z.object({
      staff: StaffUser,
      tenant: z.object({ id: Id, name: z.string(), sandbox: z.boolean() }),
    }),
    errors: [],
  },

  // ---- team (identity, managers) -----------------------------------------------------------------
  'staff.team.list': {
    ...staffOp('Staff: team', 'manager'),
    service: 'identity',
    method: 'GET',
    path: '/staff/v1/staff',
    operation: 'staff.team.list',
    idempotent: false,
    summary: "The tenant's staff users",
    response: z.object({ staff: z.array(StaffUser) }),
    errors: [],
  },
  'staff.team.invite': {
    ...staffOp('Staff: team', 'manager'),
    service: 'identity',
    method: 'POST',
    path: '/staff/v1/staff',
    operation: 'staff.team.invite',
    idempotent: true,
    summary: 'Add a staff user (they sign in with a code mailed to this email)',
    body: z.object({ email: Email, name: StaffName, role: StaffRole }),
    response: z.object({ staff: StaffUser }),
    errors: ['staff_email_taken'],
  },
  'staff.team.update': {
    ...staffOp('Staff: team', 'manager'),
    service: 'identity',
    method: 'POST',
    path: '/staff/v1/staff/:staff_id',
    operation: 'staff.team.update',
    idempotent: true,
    summary:
      "Change a staff user's name or role, or deactivate them (their sessions end at once); the last active manager stays",
    params: z.object({ staff_id: IdParam }),
    body: z.object({ name: StaffName.optional(), role: StaffRole.optional(), active: z.boolean().optional() }).strict(),
    response: z.object({ staff: StaffUser }),
    errors: ['staff_not_found', 'last_manager'],
  },

  // ---- members (identity, ledger, referrals) ------------------------------------------------------
  'staff.members.find': {
    ...staffOp('Staff: members'),
    service: 'identity',
    method: 'GET',
    path: '/staff/v1/members',
    operation: 'staff.members.find',
    idempotent: false,
    summary: 'Find a member by email or phone',
    query: z
      .object({ email: Email.optional(), phone: Phone.optional() })
      .refine((q) => q.email !== undefined || q.phone !== undefined, {
        message: 'email or phone is required',
        path: ['email'],
      }),
    response: z.object({ member: StaffMemberView }),
    errors: ['member_not_found'],
  },
  'staff.members.merge': {
    ...staffOp('Staff: members', 'manager'),
    service: 'identity',
    method: 'POST',
    path: '/staff/v1/members/:member_id/merge',
    operation: 'staff.members.merge',
    idempotent: false,
    accepted: true,
    summary:
      'Merge a duplicate member (source_member_id) into this one (a job, as POST /api/v1/members/{member_id}/merge): balances move as lots keeping their dates, holds, pending claims and referrals follow, the source becomes a tombstone; into itself 422',
    params: MemberParams,
    body: z.object({ source_member_id: Id.describe('the duplicate: its balances, holds, claims and referrals move') }),
    response: Job,
    errors: ['member_not_found', 'merge_into_itself'],
  },
  'staff.members.get': {
    ...staffOp('Staff: members'),
    service: 'identity',
    method: 'GET',
    path: '/staff/v1/members/:member_id',
    operation: 'staff.members.get',
    idempotent: false,
    summary: 'One member',
    params: MemberParams,
    response: z.object({ member: StaffMemberView }),
    errors: ['member_not_found'],
  },
  'staff.members.consents': {
    ...staffOp('Staff: members'),
    service: 'identity',
    method: 'GET',
    path: '/staff/v1/members/:member_id/consents',
    operation: 'staff.members.consents',
    idempotent: false,
    summary:
      "A member's consents (marketing email, marketing SMS): granted or withdrawn, when, and where the last change came from",
    params: MemberParams,
    response: Consents,
    errors: ['member_not_found'],
  },
  'staff.members.consents.update': {
    ...staffOp('Staff: members', 'manager'),
    service: 'identity',
    method: 'PUT',
    path: '/staff/v1/members/:member_id/consents',
    operation: 'staff.members.consents.update',
    idempotent: false,
    summary:
      'Record a consent the member gave or withdrew at the counter (managers; the purposes named, the others stay; audited as consent.changed)',
    params: MemberParams,
    body: z.object({
      consents: ConsentChanges,
      source: ConsentSource.default('console').describe('where the member said so (`console` by default)'),
    }),
    response: Consents,
    errors: ['member_not_found'],
  },
  'staff.cards.list': {
    ...staffOp('Staff: members'),
    service: 'ledger',
    method: 'GET',
    path: '/staff/v1/cards',
    operation: 'staff.cards.list',
    idempotent: false,
    summary: "The tenant's cards (cashback and points)",
    response: z.object({ cards: z.array(StaffCard) }),
    errors: [],
  },
  'staff.members.balances': {
    ...staffOp('Staff: members'),
    service: 'ledger',
    method: 'GET',
    path: '/staff/v1/members/:member_id/balances',
    operation: 'staff.members.balances',
    idempotent: false,
    summary: "A member's balance on each of the tenant's cards",
    params: MemberParams,
    response: z.object({ member_id: Id, balances: z.array(CardBalance) }),
    errors: ['member_not_found'],
  },
  'staff.members.history': {
    ...staffOp('Staff: members'),
    service: 'ledger',
    method: 'GET',
    path: '/staff/v1/members/:member_id/history',
    operation: 'staff.members.history',
    idempotent: false,
    summary: "A member's transactions on a card, newest first",
    params: MemberParams,
    query: z.object({ card_id: IdParam, ...pageQuery(20, 100) }),
    response: z.object({
      card_id: Id,
      member_id: Id,
      reward_system: z.enum(['cashback', 'points']),
      transactions: z.array(StaffHistoryEntry),
      pagination: Pagination,
    }),
    errors: ['card_not_found', 'member_not_found'],
  },
  'staff.members.referrals': {
    ...staffOp('Staff: members'),
    service: 'referrals',
    method: 'GET',
    path: '/staff/v1/members/:member_id/referrals',
    operation: 'staff.members.referrals',
    idempotent: false,
    summary: "A member's referral code on a points card (null until one was asked for) and the referrals they made",
    params: MemberParams,
    query: z.object({ card_id: IdParam, ...pageQuery(20, 100) }),
    response: z.object({
      card_id: Id,
      member_id: Id,
      referral_code: z.string().nullable(),
      referrals: z.array(ReferralOfReferrer),
      total: z.number().int(),
    }),
    errors: ['card_not_found', 'member_not_found', 'wrong_card_type'],
  },

  // ---- adjustments (ledger, managers) -------------------------------------------------------------
  'staff.adjustments.create': {
    ...staffOp('Staff: adjustments', 'manager'),
    service: 'ledger',
    method: 'POST',
    path: '/staff/v1/adjustments',
    operation: 'staff.adjustments.create',
    idempotent: true,
    summary:
      'Add or deduct points (points card) or cashback (cashback card) with a reason; journal event staff_adjustment; a deduction never takes the balance below zero. Needs an Idempotency-Key',
    body: z
      .object({
        card_id: Id,
        member_id: Id,
        direction: z.enum(['add', 'deduct']),
        points: z.number().int().positive().max(1_000_000_000).optional().describe('points cards'),
        amount: Money.refine((v) => v >= 0.01, 'must be at least 0.01')
          .optional()
          .describe('cashback cards, in currency units'),
        reason: Text.trim().min(1, 'is required').max(500),
      })
      .refine((b) => (b.points === undefined) !== (b.amount === undefined), {
        message: 'give points (points card) or amount (cashback card), not both',
        path: ['points'],
      }),
    response: z.object({
      adjustment: z.object({
        transaction_id: Id,
        card_id: Id,
        member_id: Id,
        direction: z.enum(['add', 'deduct']),
        points: z.number().int().optional(),
        amount: z.number().optional(),
        previous_balance: z.number(),
        new_balance: z.number(),
        reason: z.string(),
        created_at: Timestamp,
      }),
    }),
    errors: [
      'idempotency_key_required',
      'card_not_found',
      'member_not_found',
      'wrong_card_type',
      'insufficient_points',
      'insufficient_balance',
      'balance_limit_exceeded',
    ],
  },

  // ---- claims (claims) ----------------------------------------------------------------------------
  'staff.claims.list': {
    ...staffOp('Staff: claims'),
    service: 'claims',
    method: 'GET',
    path: '/staff/v1/claims',
    operation: 'staff.claims.list',
    idempotent: false,
    summary:
      "The claims queue: pending first, then newest first; filters by card, status and creation date; each with the member's spendable points",
    query: z.object({
      card_id: IdParam.optional(),
      status: ClaimStatus.optional(),
      from: DateOrTime.optional().describe(
        'created at or after (a date is its start, UTC; a time needs its offset, e.g. 2026-03-14T10:00:00Z)',
      ),
      to: DateOrTime.optional().describe(
        'created before the end of this date (UTC), or before this instant (with its offset)',
      ),
      ...pageQuery(20, 100),
    }),
    response: z.object({ claim_requests: z.array(StaffClaimRequest), pagination: Pagination }),
    errors: [],
  },
  'staff.claims.approve': {
    ...staffOp('Staff: claims'),
    service: 'claims',
    method: 'POST',
    path: '/staff/v1/claims/:request_id/approve',
    operation: 'staff.claims.approve',
    idempotent: true,
    summary: "Approve a pending claim: the reward's points are deducted from the member",
    params: RequestParams,
    body: z.object({ note: Note.optional() }),
    response: z.object({ claim_request: StaffClaimRequest }),
    errors: ['claim_request_not_found', 'claim_request_not_pending', 'insufficient_points'],
  },
  'staff.claims.reject': {
    ...staffOp('Staff: claims'),
    service: 'claims',
    method: 'POST',
    path: '/staff/v1/claims/:request_id/reject',
    operation: 'staff.claims.reject',
    idempotent: true,
    summary: 'Reject a pending claim; the member keeps the points',
    params: RequestParams,
    body: z.object({ note: Note.optional() }),
    response: z.object({ claim_request: StaffClaimRequest }),
    errors: ['claim_request_not_found', 'claim_request_not_pending'],
  },

  // ---- referrals (referrals) ----------------------------------------------------------------------
  'staff.referrals.dashboard': {
    ...staffOp('Staff: referrals'),
    service: 'referrals',
    method: 'GET',
    path: '/staff/v1/referrals/dashboard',
    operation: 'staff.referrals.dashboard',
    idempotent: false,
    summary: "A points card's referral statistics for every period (7d, 30d, 90d, all) and its top referrers in one",
    query: z.object({
      card_id: IdParam,
      period: ReferralPeriod.default('30d').describe('period of the top referrers'),
      limit: countParam(1, 100).default(10),
    }),
    response: z.object({
      card_id: Id,
      periods: z.array(z.object({ period: ReferralPeriod, stats: ReferralStats })),
      top_referrers: z.array(TopReferrer),
      period: ReferralPeriod,
    }),
    errors: ['card_not_found', 'wrong_card_type'],
  },

  // ---- audit (identity, managers) -----------------------------------------------------------------
  'staff.audit.list': {
    ...staffOp('Staff: audit', 'manager'),
    service: 'identity',
    method: 'GET',
    path: '/staff/v1/audit',
    operation: 'staff.audit.list',
    idempotent: false,
    summary:
      "The tenant's audit log, newest first; filters by actor (a staff email, 'operator' or an app id), action and date",
    query: z.object({
      actor: Text.trim()
        .regex(/^[A-Za-z0-9@._+-]{1,254}$/, 'must be a staff email, an app id or operator')
        .optional(),
      action: Text.trim()
        .regex(/^[a-z_]{1,32}(\.[a-z_]{1,32})?$/, 'must be an action (claim.approved) or its first part (claim)')
        .optional(),
      from: DateOrTime.optional().describe(
        'at or after (a date is its start, UTC; a time needs its offset, e.g. 2026-03-14T10:00:00Z)',
      ),
      to: DateOrTime.optional().describe('before the end of this date (UTC), or before this instant (with its offset)'),
      ...pageQuery(50, 200),
    }),
    response: z.object({ entries: z.array(AuditRow), pagination: Pagination }),
    errors: [],
  },
  'staff.audit.verify': {
    ...staffOp('Staff: audit', 'manager'),
    service: 'identity',
    method: 'GET',
    path: '/staff/v1/audit/verify',
    operation: 'staff.audit.verify',
    idempotent: false,
    summary:
      "Verify the tenant's hash chain: every row's keyed hash, the links, the sequence, the head and the signed anchors (an edited, deleted or rebuilt row shows)",
    query: AnchorQuery,
    response: AuditVerification,
    errors: ['audit_anchor_invalid'],
  },
  'staff.rules.list': {
    ...staffOp('Staff: earning rules', 'manager'),
    service: 'ledger',
    method: 'GET',
    path: '/staff/v1/cards/:card_id/rules',
    operation: 'staff.rules.list',
    idempotent: false,
    summary: "A card's earning rules, in the order they run",
    params: RuleCardParams,
    response: z.object({ card_id: Id, time_zone: z.string(), rules: z.array(RuleRecord), total: z.number().int() }),
    errors: ['card_not_found'],
  },
  'staff.rules.create': {
    ...staffOp('Staff: earning rules', 'manager'),
    service: 'ledger',
    method: 'POST',
    path: '/staff/v1/cards/:card_id/rules',
    operation: 'staff.rules.create',
    idempotent: true,
    summary: 'Create an earning rule (a draft unless status is active)',
    params: RuleCardParams,
    body: RuleInput,
    response: z.object({ rule: RuleRecord }),
    errors: ['card_not_found', 'invalid_rule', 'active_rule_limit', 'idempotency_key_reused'],
  },
  'staff.rules.activate': {
    ...staffOp('Staff: earning rules', 'manager'),
    service: 'ledger',
    method: 'POST',
    path: '/staff/v1/cards/:card_id/rules/:rule_id/activate',
    operation: 'staff.rules.activate',
    idempotent: false,
    summary: 'Activate a draft or paused rule',
    params: RuleParams,
    response: z.object({ rule: RuleRecord }),
    errors: ['card_not_found', 'rule_not_found', 'rule_state_conflict', 'active_rule_limit'],
  },
  'staff.rules.pause': {
    ...staffOp('Staff: earning rules', 'manager'),
    service: 'ledger',
    method: 'POST',
    path: '/staff/v1/cards/:card_id/rules/:rule_id/pause',
    operation: 'staff.rules.pause',
    idempotent: false,
    summary: 'Pause an active rule',
    params: RuleParams,
    response: z.object({ rule: RuleRecord }),
    errors: ['card_not_found', 'rule_not_found', 'rule_state_conflict'],
  },
  'staff.rules.preview': {
    ...staffOp('Staff: earning rules', 'manager'),
    service: 'ledger',
    method: 'POST',
    path: '/staff/v1/cards/:card_id/rules/preview',
    operation: 'staff.rules.preview',
    idempotent: false,
    summary:
      "What a sample purchase would earn with the card's active rules, its drafts and paused rules, and why (the trace); changes nothing",
    params: RuleCardParams,
    body: z.object({
      purchase_amount: Money.refine((v) => v > 0, 'must be greater than 0'),
      line_items: LineItems.optional(),
      tags: Tags.optional(),
      member_id: Id.optional().describe(
        "the member whose caps and purchase count apply (none: a new member's); an unknown or erased one is 404 member_not_found",
      ),
    }),
    response: z.object({
      card_id: Id,
      total: z.number().describe('points, or currency units'),
      base: z.number(),
      rules_applied: z.array(RuleApplied),
      trace: z.array(RuleTraceEntry),
    }),
    errors: ['card_not_found', 'member_not_found', 'line_items_mismatch'],
  },
  // ---- programme report (ledger, managers), as the merchant API's ------------------------------------
  'staff.cards.report': {
    ...staffOp('Staff: reports', 'manager'),
    service: 'ledger',
    method: 'GET',
    path: '/staff/v1/cards/:card_id/report',
    operation: 'staff.cards.report',
    idempotent: false,
    summary:
      "A card's programme report per day, week or month of its time zone (as GET /api/v1/loyalty/cards/{card_id}/report): issued, redeemed, expired, refunded, active members, outstanding balance and liability, breakage, redemption rate, top rewards",
    params: RuleCardParams,
    query: ReportQuery.omit({ card_id: true }),
    response: ProgrammeReport,
    errors: ['card_not_found'],
  },
  // ---- exports (identity: members, ledger: the rest; managers), as the merchant API's --------------
  'staff.exports.download': {
    ...staffOp('Staff: exports', 'manager'),
    service: 'ledger',
    route: exportOwner,
    idempotent: false,
    method: 'GET',
    path: '/staff/v1/exports/:entity',
    operation: 'staff.exports.download',
    pagedDownload: { contentTypes: Object.values(exportContentTypes) },
    summary:
      'Export the journal, members, balances or lots as JSON Lines or CSV, streamed as it is read (as GET /api/v1/exports/{entity})',
    params: ExportParams,
    query: ExportQuery,
    response: z.string(),
    errors: ['unknown_export', 'card_not_found'],
  },
  // ---- imports (identity: members, ledger: balances; managers), as the merchant API's --------------
  'staff.imports.create': {
    ...staffOp('Staff: imports', 'manager'),
    service: 'identity',
    route: importKindOwner,
    upload: importUpload,
    accepted: true,
    idempotent: false,
    method: 'POST',
    path: '/staff/v1/imports',
    operation: 'staff.imports.create',
    summary:
      'Upload a CSV or JSON Lines file of members, balances, tiers or past transactions (streamed, up to 2 GB); answers the import with its validate job',
    query: CreateQuery,
    response: ImportRecord,
    errors: ['unknown_import_kind', 'card_not_found', 'unsupported_media_type', 'payload_too_large'],
  },
  'staff.imports.get': {
    ...staffOp('Staff: imports', 'manager'),
    service: 'identity',
    route: importOwner,
    idempotent: false,
    method: 'GET',
    path: '/staff/v1/imports/:import_id',
    operation: 'staff.imports.get',
    summary:
      'An import: its status, counts and jobs with their progress (the validate job’s result_url is the error file)',
    params: ImportParams,
    response: ImportRecord,
    errors: ['import_not_found'],
  },
  'staff.imports.execute': {
    ...staffOp('Staff: imports', 'manager'),
    service: 'identity',
    route: importOwner,
    accepted: true,
    idempotent: false,
    method: 'POST',
    path: '/staff/v1/imports/:import_id/execute',
    operation: 'staff.imports.execute',
    summary: 'Execute a validated import (a job); asking again answers the same job',
    params: ImportParams,
    response: ImportRecord,
    errors: ['import_not_found', 'import_not_validated'],
  },
  'staff.imports.errors': {
    ...staffOp('Staff: imports', 'manager'),
    service: 'identity',
    route: importOwner,
    download: true,
    idempotent: false,
    method: 'GET',
    path: '/staff/v1/imports/:import_id/errors',
    operation: 'staff.imports.errors',
    summary: 'Download the error file of a validated import (CSV: line, column, reason), kept 7 days',
    params: ImportParams,
    response: z.string(),
    errors: ['import_not_found', 'job_result_not_found'],
  },
  // ---- tiers (ledger): staff read, managers configure (ops/tiers.ts) -------------------------------
  ...tierStaffOperations,
  // ---- mail templates (identity, managers; ops/mail.ts) ---------------------------------------------
  ...mailTemplateStaffOperations,
});

// ---- operator: the first manager and the chain check ------------------------------------------------

const admin = { scope: null, memberToken: false, idempotent: false, tag: 'Provisioning (operator)' } as const;
const TenantParams = z.object({ tenant_id: IdParam });

export const staffAdminOperations = defineOperations({
  'admin.staff.create': {
    ...admin,
    service: 'identity',
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/staff',
    operation: 'admin.staff.create',
    summary: 'Create a staff user of a tenant (e.g. its first manager), who signs in to the console with a mailed code',
    params: TenantParams,
    body: z.object({ email: Email, name: StaffName.optional(), role: StaffRole }),
    response: z.object({ staff: StaffUser }),
    errors: ['invalid_operator_token', 'tenant_not_found', 'staff_email_taken'],
  },
  'admin.staff.list': {
    ...admin,
    service: 'identity',
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/staff',
    operation: 'admin.staff.list',
    summary: "List a tenant's staff users",
    params: TenantParams,
    response: z.object({ staff: z.array(StaffUser) }),
    errors: ['invalid_operator_token', 'tenant_not_found'],
  },
  'admin.audit.verify': {
    ...admin,
    service: 'identity',
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/audit/verify',
    operation: 'admin.audit.verify',
    summary: "Verify a tenant's audit hash chain (npm run admin -- audit:verify --tenant N [--anchor TOKEN])",
    params: TenantParams,
    query: AnchorQuery,
    response: AuditVerification,
    errors: ['invalid_operator_token', 'tenant_not_found', 'audit_anchor_invalid'],
  },
});

/**
 * The instants a `from`/`to` query pair stands for: `from` at or after (a date is its start,
 * UTC), `to` before (a date counts whole: before the next day's start).
 */
export function queryDateRange(q: { from?: string; to?: string }): { from?: Date; to?: Date } {
  const isDay = (v: string) => /^\d{4}-\d{2}-\d{2}$/.test(v);
  const from = q.from === undefined ? undefined : parseIsoTime(q.from);
  let to = q.to === undefined ? undefined : parseIsoTime(q.to);
  if (to && q.to !== undefined && isDay(q.to)) to = new Date(to.getTime() + 86_400_000);
  return { from, to };
}
