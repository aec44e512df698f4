import { z } from 'zod';
import { Id, Text, Timestamp } from '../common.ts';
import { Reference } from './member-ref.ts';
import { defineOperations } from './types.ts';

/**
 * Points transfers between two members of a tenant on one points card (families pooling points),
 * owned by the ledger. The sender authorises a transfer with their member token or with a
 * one-time code of purpose `transfer` mailed to them; the card's `transfers_enabled` setting turns
 * transfers on (off by default) and `transfer_monthly_cap` caps what a member sends per calendar
 * month (the card's time zone). Idempotent by `reference` per card.
 */
const points = { service: 'ledger', tag: 'Points' } as const;

const VerificationCode = Text.trim().regex(/^[0-9]{6}$/, 'must be the 6-digit code');

/** One lot the transfer moved: the receiver's lot keeps the sender's lot's dates. */
const MovedLot = z
  .object({
    points: z.number().int(),
    available_at: Timestamp.describe('when the points became spendable (kept from the sender’s lot)'),
    expires_at: Timestamp.nullable().describe('when they expire (kept from the sender’s lot); null: never'),
  })
  .meta({ id: 'TransferredLot' });

export const TransferRecord = z
  .object({
    transfer_id: Id,
    card_id: Id,
    from_member_id: Id,
    to_member_id: Id,
    points: z.number().int(),
    reference: z.string(),
    from_balance: z.number().int().describe("the sender's spendable points after the transfer"),
    to_balance: z.number().int().describe("the receiver's spendable points after the transfer"),
    lots: z.array(MovedLot).describe('what moved, soonest-expiring first, with the dates each lot keeps'),
    transferred_at: Timestamp,
  })
  .meta({ id: 'PointsTransfer' });

export const transferOperations = defineOperations({
  'points.transfer': {
    ...points,
    method: 'POST',
    path: '/api/v1/loyalty/points/transfer',
    operation: 'points.transfer',
    scope: 'points_write',
    memberToken: 'optional',
    idempotent: true,
    summary:
      "Move spendable points from one member to another on a points card, lots keeping their expiry; the sender's X-Member-Token or a verification_code of purpose transfer authorises it; a repeated reference answers the first transfer",
    body: z
      .object({
        card_id: Id,
        from_member_id: Id,
        to_member_id: Id,
        points: z.number().int().positive().max(1_000_000_000),
        reference: Reference.describe('unique per card: a retry with it answers the first transfer'),
        verification_code: VerificationCode.optional().describe(
          'the code from POST /api/v1/loyalty/points/transfer/request-otp; needed without the sender’s member token',
        ),
      })
      .refine((b) => b.from_member_id !== b.to_member_id, {
        message: 'must differ from from_member_id',
        path: ['to_member_id'],
      }),
    response: TransferRecord,
    errors: [
      'card_not_found',
      'member_not_found',
      'wrong_card_type',
      'transfers_disabled',
      'insufficient_points',
      'transfer_limit_exceeded',
      'balance_limit_exceeded',
      'duplicate_reference',
      'member_token_mismatch',
      'invalid_verification_code',
    ],
  },
  'points.transfer.request_otp': {
    ...points,
    method: 'POST',
    path: '/api/v1/loyalty/points/transfer/request-otp',
    operation: 'points.transfer.request_otp',
    scope: 'points_write',
    memberToken: false,
    idempotent: false,
    summary: "Mail a transfer verification code (purpose transfer) to the sending member's email",
    body: z.object({ card_id: Id, from_member_id: Id }),
    response: z.object({
      expires_at: Timestamp,
      expires_in_minutes: z.number().int(),
      otp_code: z.string().optional().describe('sandbox tenants only'),
    }),
    topLevelMessage: true,
    errors: [
      'member_not_found',
      'card_not_found',
      'wrong_card_type',
      'transfers_disabled',
      'otp_cooldown',
      'otp_hourly_limit',
      'email_delivery_failed',
    ],
  },
});

const at = '2026-03-14T09:26:53.000Z';

/** Examples of the transfer operations (validated by the contracts' examples test). */
export const transferOperationExamples = {
  'points.transfer': {
    request: { card_id: 2, from_member_id: 42, to_member_id: 43, points: 150, reference: 'gift-2026-03-14' },
    response: {
      transfer_id: 9,
      card_id: 2,
      from_member_id: 42,
      to_member_id: 43,
      points: 150,
      reference: 'gift-2026-03-14',
      from_balance: 73,
      to_balance: 410,
      lots: [
        { points: 100, available_at: '2025-06-01T10:00:00.000Z', expires_at: '2026-06-01T10:00:00.000Z' },
        { points: 50, available_at: '2025-09-12T16:30:00.000Z', expires_at: '2026-09-12T16:30:00.000Z' },
      ],
      transferred_at: at,
    },
  },
  'points.transfer.request_otp': {
    request: { card_id: 2, from_member_id: 42 },
    response: { expires_at: '2026-03-14T09:36:53.000Z', expires_in_minutes: 10, otp_code: '480213' },
    message: "A verification code was sent to the sending member's email.",
  },
};
