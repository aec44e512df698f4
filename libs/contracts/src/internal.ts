import { z } from 'zod';
import { Metadata, Text } from './common.ts';
import { Meta, StaffActorMeta } from './messages.ts';
import { defineInternalOperations } from './ops/types.ts';

/**
 * Messages between services (and from the gateway) that are not HTTP routes.
 * Each entry: the owning service, its operation name, and request/reply schemas.
 */
export const AuthenticateRequest = z.object({
  app_id: Text,
  api_key: Text,
  member_token: Text.optional(),
});
/** Who is calling: the part of the request meta that authentication establishes. */
export const AuthenticateReply = Meta.pick({
  tenant_id: true,
  app_id: true,
  sandbox: true,
  scopes: true,
  member_id: true,
  session_id: true,
}).extend({
  /** When the member token's session ends (ISO time): the gateway never trusts it past that. */
  session_expires_at: z.string().optional(),
});
export type AuthenticateReply = z.infer<typeof AuthenticateReply>;

export const internalOperations = defineInternalOperations({
  /** Gateway -> identity: resolve app credentials (and a member token when presented). */
  authenticate: {
    service: 'identity',
    operation: 'internal.authenticate',
    request: AuthenticateRequest,
    reply: AuthenticateReply,
    meta: z.object({ request_id: Text.min(1).max(128) }),
  },
  /**
   * Gateway -> identity: a one-click unsubscribe (RFC 8058) from a marketing mail's link; the
   * token names the tenant, member and purpose, signed by identity. No app credentials.
   */
  unsubscribe: {
    service: 'identity',
    operation: 'internal.consent.unsubscribe',
    request: z.object({ token: Text.max(512) }),
    reply: z.object({ purpose: z.string() }),
    meta: z.object({ request_id: Text.min(1).max(128) }),
  },
  /**
   * Gateway -> identity: resolve a staff token. A replica trusts the answer for a short TTL at most
   * (never past the session's end); identity's `credentials-changed` broadcast names the staff
   * session or user whose credentials changed, and every replica forgets it at once.
   */
  authenticateStaff: {
    service: 'identity',
    operation: 'internal.staff.authenticate',
    request: z.object({ staff_token: Text }),
    reply: z.object({
      tenant_id: z.number().int().positive(),
      staff: StaffActorMeta,
      session_id: z.number().int().positive(),
      /** When the staff session ends (ISO time): the gateway never trusts the token past that. */
      session_expires_at: z.string().optional(),
    }),
    meta: z.object({ request_id: Text.min(1).max(128) }),
  },
});

/**
 * identity's `credentials-changed` broadcast about staff, after the change committed: a staff
 * session ended (`staff_session_id`: a sign-out), or a staff user's credentials changed
 * (`staff_id`: role, deactivation, or the tenant deactivated or reactivated). Every gateway
 * replica forgets what it cached of that session or user. (The same subject names apps by
 * `app_id` and member sessions by `session_id`.)
 */
export const StaffCredentialsChanged = z.union([
  z.object({ tenant_id: z.number().int().positive(), staff_session_id: z.number().int().positive() }),
  z.object({ tenant_id: z.number().int().positive(), staff_id: z.number().int().positive() }),
]);
export type StaffCredentialsChanged = z.infer<typeof StaffCredentialsChanged>;

/** identity's `members-changed` broadcast: a member became a tombstone (erased); forget what you cached. */
export const MembersChanged = z.object({
  tenant_id: z.number().int().positive(),
  member_id: z.number().int().positive(),
});

/** A member as other services see it: personal data already masked. */
export const MemberSummary = z.object({
  id: z.number().int(),
  name: z.string(),
  email: z.string().nullable().describe('masked'),
  phone: z.string().nullable().describe('masked'),
  has_email: z.boolean(),
  is_active: z.boolean(),
});
export type MemberSummary = z.infer<typeof MemberSummary>;

export const ResolveMemberRequest = z
  .object({
    member_id: z.number().int().positive().optional(),
    email: Text.optional(),
    phone: Text.optional(),
    /** Create the member when none matches (earn auto-creates members). Needs email or phone. */
    create_if_missing: z.boolean().default(false),
    name: Text.trim().min(1).max(200).optional(),
  })
  .refine((r) => r.member_id !== undefined || r.email !== undefined || r.phone !== undefined, {
    message: 'member_id, email or phone is required',
    path: ['member_id'],
  });
export const ResolveMemberReply = z.object({ member: MemberSummary, created: z.boolean() });

export const GetMembersRequest = z.object({
  ids: z.array(z.number().int().positive()).max(1000),
  /** Also answer `merged`: which of the ids are merged-away tombstones, and into whom. */
  merged: z.boolean().optional(),
});
export const GetMembersReply = z.object({
  members: z.array(MemberSummary),
  /** When asked: the ids merged into another member (a tombstone not listed here was erased). */
  merged: z.array(z.object({ id: z.number().int(), into: z.number().int() })).optional(),
});

export const IssueClaimOtpRequest = z.object({
  member_email: Text,
  context: z.record(Text, z.unknown()).default({}),
});
export const IssueClaimOtpReply = z.object({
  member_id: z.number().int(),
  expires_at: z.string(),
  expires_in_minutes: z.number().int(),
  otp_code: z.string().optional().describe('sandbox tenants only'),
});

export const VerifyClaimOtpRequest = z.object({ member_email: Text, code: Text });
export const VerifyClaimOtpReply = z.object({
  member_id: z.number().int(),
  context: z.record(z.string(), z.unknown()),
});

/** Purposes of member codes other services ask for by member id (claims use their own, by email). */
export const MemberOtpPurpose = z.enum(['transfer']);
export const IssueMemberOtpRequest = z.object({
  member_id: z.number().int().positive(),
  purpose: MemberOtpPurpose,
  context: z.record(Text, z.unknown()).default({}),
});
export const VerifyMemberOtpRequest = z.object({
  member_id: z.number().int().positive(),
  purpose: MemberOtpPurpose,
  code: Text,
});

/**
 * Identity's operations for other services. Every request carries the caller's `meta` (tenant).
 * - resolve_member: find by id/email/phone within the tenant (or create); `member_not_found` otherwise.
 * - get_members: summaries of many members of the tenant (unknown ids are left out); with
 *   `merged`, also which of the ids were merged into another member (the others left out are
 *   erased or unknown).
 * - issue_claim_otp: mail a claim verification code (same rules as login codes: 6 digits,
 *   10 minutes, single use, limited tries, cooldown and hourly cap); `member_not_found`.
 * - verify_claim_otp: consume a claim code; `invalid_verification_code` when missing, wrong, used,
 *   expired or dead.
 * - issue_member_otp / verify_member_otp: the same for a member named by id and a purpose
 *   (`transfer`: a points transfer's sender); verification under `meta.idempotency_key` replays.
 */
export const identityOperations = defineInternalOperations({
  resolveMember: {
    service: 'identity',
    operation: 'internal.member.resolve',
    request: ResolveMemberRequest,
    reply: ResolveMemberReply,
  },
  getMembers: {
    service: 'identity',
    operation: 'internal.member.get_many',
    request: GetMembersRequest,
    reply: GetMembersReply,
  },
  issueClaimOtp: {
    service: 'identity',
    operation: 'internal.claim_otp.issue',
    request: IssueClaimOtpRequest,
    reply: IssueClaimOtpReply,
  },
  verifyClaimOtp: {
    service: 'identity',
    operation: 'internal.claim_otp.verify',
    request: VerifyClaimOtpRequest,
    reply: VerifyClaimOtpReply,
  },
  issueMemberOtp: {
    service: 'identity',
    operation: 'internal.member_otp.issue',
    request: IssueMemberOtpRequest,
    reply: IssueClaimOtpReply,
  },
  verifyMemberOtp: {
    service: 'identity',
    operation: 'internal.member_otp.verify',
    request: VerifyMemberOtpRequest,
    reply: VerifyClaimOtpReply,
  },
  /** The tenant of the meta, from identity's records (`tenant_not_found` when there is none). */
  getTenant: {
    service: 'identity',
    operation: 'internal.tenant.get',
    request: z.object({}),
    reply: z.object({ tenant: z.object({ id: z.number().int(), sandbox: z.boolean() }) }),
  },
});

/** A card as other services need it (ledger owns cards, rewards and their settings). */
export const CardSummary = z.object({
  id: z.number().int(),
  name: z.string(),
  reward_system: z.enum(['cashback', 'points']),
  referrer_bonus: z.number().int(),
  referee_bonus: z.number().int(),
  /** Referral bonuses wait for the referee's first points earn on the card. */
  referral_bonus_on_first_purchase: z.boolean(),
  /** How long a reward claim request stays pending before it expires. */
  claim_lifetime_hours: z.number().int(),
});
export type CardSummary = z.infer<typeof CardSummary>;

export const RewardSummary = z.object({
  id: z.number().int(),
  card_id: z.number().int(),
  name: z.string(),
  points_cost: z.number().int(),
  active: z.boolean(),
});
export type RewardSummary = z.infer<typeof RewardSummary>;

export const PointsMovementRequest = z.object({
  card_id: z.number().int().positive(),
  member_id: z.number().int().positive(),
  points: z.number().int().positive(),
  /** Journal label: `reward_claimed` (claim approval) or `referral_bonus`. */
  event: z.enum(['reward_claimed', 'referral_bonus']),
  reference: Text.max(255).optional(),
  metadata: Metadata.optional(),
});
export const PointsMovementReply = z.object({
  transaction_id: z.number().int(),
  points: z.number().int().describe('points moved (positive)'),
  previous_balance: z.number().int(),
  new_balance: z.number().int(),
});

export const HoldRequest = z.object({
  card_id: z.number().int().positive(),
  member_id: z.number().int().positive(),
  points: z.number().int().positive(),
  /** The ledger releases the hold itself if it is still held then (the claim's expiry and a margin). */
  expires_at: z.iso.datetime(),
});
export const HoldStatus = z.enum(['held', 'captured', 'released']);
export const HoldReply = z.object({
  hold_id: z.number().int(),
  status: HoldStatus,
  points: z.number().int(),
  new_balance: z.number().int().describe('spendable points after the hold'),
});
export const ReleaseHoldRequest = z.object({
  card_id: z.number().int().positive(),
  member_id: z.number().int().positive(),
});
export const ReleaseHoldReply = z.object({
  released: z.boolean().describe('false: no hold under the key, or it was already captured or released'),
  status: HoldStatus.nullable(),
});

/**
 * Ledger's operations for other services. Points movements require `meta.idempotency_key`
 * (deterministic, e.g. `claim:<id>` or `referral:<id>:referrer`): a retried saga step replays the
 * first reply and never moves points twice.
 * - get_card: `card_not_found` for a missing or foreign card.
 * - get_reward: `reward_not_found` unless the reward belongs to the card.
 * - debit_points: captures the hold placed under the same key if it is held (the claim's approval);
 *   otherwise debits the spendable balance: `insufficient_points` (422) leaves it untouched;
 *   `wrong_card_type` on a cashback card.
 * - hold_points: reserves spendable points under the key (a claim request); `insufficient_points`
 *   (422) and nothing held when the spendable balance does not cover it; the same key answers the
 *   same hold.
 * - release_hold: gives a held hold's points back (a rejected or expired claim); idempotent.
 * - credit_points: `wrong_card_type` on a cashback card; `balance_limit_exceeded` (422) past the maximum balance, nothing written.
 */
export const ledgerOperations = defineInternalOperations({
  getCard: {
    service: 'ledger',
    operation: 'internal.card.get',
    request: z.object({ card_id: z.number().int().positive() }),
    reply: z.object({ card: CardSummary }),
  },
  getReward: {
    service: 'ledger',
    operation: 'internal.reward.get',
    request: z.object({ card_id: z.number().int().positive(), reward_id: z.number().int().positive() }),
    reply: z.object({ reward: RewardSummary }),
  },
  debitPoints: {
    service: 'ledger',
    operation: 'internal.points.debit',
    request: PointsMovementRequest,
    reply: PointsMovementReply,
  },
  creditPoints: {
    service: 'ledger',
    operation: 'internal.points.credit',
    request: PointsMovementRequest,
    reply: PointsMovementReply,
  },
  holdPoints: {
    service: 'ledger',
    operation: 'internal.points.hold',
    request: HoldRequest,
    reply: HoldReply,
  },
  releaseHold: {
    service: 'ledger',
    operation: 'internal.points.release_hold',
    request: ReleaseHoldRequest,
    reply: ReleaseHoldReply,
  },
  /** Spendable points of several members on their cards (the staff claims queue); unknown accounts answer 0. */
  pointsBalances: {
    service: 'ledger',
    operation: 'internal.points.balances',
    request: z.object({
      accounts: z
        .array(z.object({ card_id: z.number().int().positive(), member_id: z.number().int().positive() }))
        .max(200),
    }),
    reply: z.object({
      balances: z.array(
        z.object({ card_id: z.number().int(), member_id: z.number().int(), points_balance: z.number().int() }),
      ),
    }),
  },
});
