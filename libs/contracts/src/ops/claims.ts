import * as z from 'zod';
import { Email, Id, IdParam, Pagination, Text, Timestamp, pageQuery } from '../common.ts';
import { defineOperations } from './types.ts';

/**
 * Reward claim requests: a member proves who they are with a mailed code,
 * a claim request is created, staff approve (points are deducted through the ledger) or reject it.
 * A pending request expires after the card's claim lifetime.
 */
const base = { service: 'claims', memberToken: false, tag: 'Reward claims' } as const;

/**
 * Statuses a request shows clients (the interface's four). The claims service also keeps a
 * transient `approving` internally (an approval waiting for the ledger's debit); clients see such a
 * request as `pending`, which it still is until the debit is applied.
 */
export const claimStatuses = ['pending', 'approved', 'rejected', 'expired'] as const;
export const ClaimStatus = z.enum(claimStatuses);
export type ClaimStatus = z.infer<typeof ClaimStatus>;

const Note = Text.trim().max(1000, 'must be at most 1000 characters');
const RequestParams = z.object({ request_id: IdParam });
const StaffBody = z.object({ staff_note: Note.optional() });

export const ClaimRequestRecord = z
  .object({
    id: Id,
    status: ClaimStatus,
    member: z.object({ id: Id, name: z.string().nullable(), email: z.string().nullable().describe('masked') }),
    card_id: Id,
    reward: z.object({ id: Id, name: z.string(), points_cost: z.number().int() }),
    member_note: z.string().nullable(),
    staff_note: z.string().nullable(),
    points_deducted: z.number().int().nullable().describe('set on approval'),
    created_at: Timestamp,
    approved_at: Timestamp.nullable(),
    rejected_at: Timestamp.nullable(),
    expires_at: Timestamp.describe('a pending request expires at this time'),
  })
  .meta({ id: 'ClaimRequest' });
export type ClaimRequestRecord = z.infer<typeof ClaimRequestRecord>;

export const claimsOperations = defineOperations({
  'claims.request_otp': {
    ...base,
    method: 'POST',
    path: '/api/v1/loyalty/claims/request-otp',
    operation: 'claims.request_otp',
    scope: 'points_write',
    idempotent: false,
    summary: "Mail a claim verification code to the member's email",
    body: z.object({ member_email: Email, card_id: Id, reward_id: Id.optional() }),
    response: z.object({
      expires_at: Timestamp,
      expires_in_minutes: z.number().int(),
      otp_code: z.string().optional().describe('sandbox tenants only'),
    }),
    topLevelMessage: true,
    errors: [
      'member_not_found',
      'card_not_found',
      'reward_not_found',
      'reward_inactive',
      'wrong_card_type',
      'otp_cooldown',
      'otp_hourly_limit',
      'email_delivery_failed',
      'tenant_not_found',
    ],
  },
  'claims.create': {
    ...base,
    method: 'POST',
    path: '/api/v1/loyalty/claims',
    operation: 'claims.create',
    scope: 'points_write',
    idempotent: true,
    summary:
      "Create a claim request with the verification code the member received; the reward's points are held (not spendable) until staff decide",
    body: z.object({
      member_email: Email,
      card_id: Id,
      reward_id: Id,
      verification_code: Text.trim().regex(/^[0-9]{6}$/, 'must be the 6-digit code'),
      member_note: Note.optional(),
    }),
    response: z.object({ claim_request: z.object({ id: Id, status: z.literal('pending'), created_at: Timestamp }) }),
    errors: [
      'invalid_verification_code',
      'card_not_found',
      'reward_not_found',
      'reward_inactive',
      'wrong_card_type',
      'insufficient_points',
    ],
  },
  'claims.list': {
    ...base,
    method: 'GET',
    path: '/api/v1/loyalty/claims',
    operation: 'claims.list',
    scope: 'points_read',
    idempotent: false,
    summary: 'List the claim requests of a card, newest first',
    query: z.object({ card_id: IdParam, status: ClaimStatus.optional(), ...pageQuery(20, 100) }),
    response: z.object({ card_id: Id, claim_requests: z.array(ClaimRequestRecord), pagination: Pagination }),
    errors: ['card_not_found'],
  },
  'claims.get': {
    ...base,
    method: 'GET',
    path: '/api/v1/loyalty/claims/:request_id',
    operation: 'claims.get',
    scope: 'points_read',
    idempotent: false,
    summary: 'Get one claim request',
    params: RequestParams,
    response: z.object({ claim_request: ClaimRequestRecord }),
    errors: ['claim_request_not_found'],
  },
  'claims.approve': {
    ...base,
    method: 'POST',
    path: '/api/v1/loyalty/claims/:request_id/approve',
    operation: 'claims.approve',
    scope: 'points_write',
    idempotent: true,
    summary: "Approve a pending request: the reward's points are deducted from the member's balance",
    params: RequestParams,
    body: StaffBody,
    response: z.object({
      claim_request: z.object({
        id: Id,
        status: z.literal('approved'),
        points_deducted: z.number().int(),
        approved_at: Timestamp,
      }),
    }),
    errors: ['claim_request_not_found', 'claim_request_not_pending', 'insufficient_points'],
  },
  'claims.reject': {
    ...base,
    method: 'POST',
    path: '/api/v1/loyalty/claims/:request_id/reject',
    operation: 'claims.reject',
    scope: 'points_write',
    idempotent: true,
    summary: 'Reject a pending request; the member keeps the points',
    params: RequestParams,
    body: StaffBody,
    response: z.object({ claim_request: z.object({ id: Id, status: z.literal('rejected'), rejected_at: Timestamp }) }),
    errors: ['claim_request_not_found', 'claim_request_not_pending'],
  },
});
