import { z } from 'zod';
import { Id, Timestamp } from './common.ts';
import { ClaimStatus } from './ops/claims.ts';

/**
 * The public webhook event types: the stable names and payloads merchants' systems receive, and the
 * domain event (`<service>.<event>` on JetStream) each one is made from. The webhooks service
 * delivers `{id, type, created_at, tenant_id, data}` where `data` is the domain event's data parsed
 * by the type's schema (fields not listed here are left out, so internal fields never leak), and the
 * OpenAPI document's `webhooks` section is generated from the same table.
 *
 * Adding a type = one entry here (and the domain event in its service's outbox).
 */
export interface WebhookEventType {
  /** The domain event it is made from (`<service>.<event>`); null: made by the webhooks service itself. */
  source: string | null;
  summary: string;
  data: z.ZodObject;
}

const Money = z.number().describe('currency units, two decimals');
const Points = z.number().int();
const Reference = z.string().nullable().describe("the merchant's reference of the purchase, null when none");

const movement = {
  transaction_id: Id.describe('the journal entry'),
  member_id: Id,
  card_id: Id,
};

/** A credit's lot: when it becomes spendable and when it expires (absent on events older than lots). */
const lotTerms = {
  pending: z.boolean().optional().describe("the credit waits for the card's return window (pending_days)"),
  available_at: Timestamp.optional().describe('when it is (or was) spendable'),
  expires_at: Timestamp.nullable().optional().describe('when it expires; null: never'),
};

/** Expiry of what was left of lots, per member and card at once (one journal row per lot). */
const expiry = {
  member_id: Id,
  card_id: Id,
  lots: z.number().int().describe('lots that expired'),
  transaction_ids: z.array(Id).describe('their journal entries (points_expired / cashback_expired)'),
};

/** A coming expiry, per member, card and expiry day. */
const warning = {
  member_id: Id,
  card_id: Id,
  lots: z.number().int().describe('lots that expire that day'),
  expires_at: Timestamp.describe('when the first of them expires'),
  expires_on: z.string().describe('the expiry day (UTC), YYYY-MM-DD'),
};

/** A member's tier on a card, from one tier to another (`to` is `from` on a renewal or a warning: the tier that would follow). */
const tierChange = {
  member_id: Id,
  card_id: Id,
  from: z.string().describe('the tier before'),
  to: z.string().describe('the tier after (a warning: the tier the member would move to)'),
  from_rank: z.number().int(),
  to_rank: z.number().int(),
  valid_until: Timestamp.nullable().describe('until when the tier after holds; null: no end'),
  reason: z.string().optional().describe('qualified, review or manual'),
};

const claimData = z
  .object({
    claim_request_id: Id,
    member_id: Id,
    card_id: Id,
    reward_id: Id,
    reward_name: z.string(),
    points_cost: Points,
    status: ClaimStatus,
    member_note: z.string().nullable(),
    staff_note: z.string().nullable(),
    points_deducted: Points.nullable().describe('set on approval'),
    created_at: Timestamp,
    expires_at: Timestamp,
    approved_at: Timestamp.nullable(),
    rejected_at: Timestamp.nullable(),
    expired_at: Timestamp.nullable(),
  })
  .meta({ id: 'WebhookClaimRequest' });

const referralData = z
  .object({
    referral_id: Id,
    card_id: Id,
    referrer_id: Id.describe('member id of the referrer'),
    referee_id: Id.describe('member id of the new member'),
    referrer_bonus: Points,
    referee_bonus: Points,
    status: z
      .enum(['pending', 'completed'])
      .describe("pending while the bonuses wait for the referee's first purchase"),
  })
  .meta({ id: 'WebhookReferral' });

export const webhookEventTypes = {
  'member.registered': {
    source: 'identity.member_registered',
    summary: 'A member was created: registered through the API, or by their first earn with a new email or phone.',
    data: z.object({
      member_id: Id,
      name: z.string(),
      email: z.string().nullable().describe('masked, as in API responses'),
      phone: z.string().nullable().describe('masked, as in API responses'),
      source: z.enum(['registration', 'purchase']),
    }),
  },
  'member.erased': {
    source: 'identity.member_erased',
    summary:
      "A member's personal data was erased in every service (POST /api/v1/members/{member_id}/erase): erase what your own systems hold about them. Ids, amounts and the journal stay.",
    data: z.object({ member_id: Id, erased_at: Timestamp }),
  },
  'member.merged': {
    source: 'identity.member_merged',
    summary:
      'A duplicate member (source_member_id) was merged into another (target_member_id): its balances, holds, pending claims and referrals are the target’s now, and the source is gone (404). Point your records of the source at the target.',
    data: z.object({ source_member_id: Id, target_member_id: Id, merged_at: Timestamp }),
  },
  'points.earned': {
    source: 'ledger.points_earned',
    summary: 'Points were earned for a purchase.',
    data: z.object({
      ...movement,
      points: Points,
      purchase_amount: Money,
      reference: Reference,
      previous_balance: Points.describe('spendable, before'),
      new_balance: Points.describe('spendable, after (unchanged when the points are pending)'),
      ...lotTerms,
      rules_applied: z
        .array(
          z.object({
            rule_id: Id,
            version: z.number().int(),
            name: z.string(),
            amount: z.number(),
            capped: z.boolean(),
          }),
        )
        .optional()
        .describe(
          'the earning rules beyond the base earn that gave something (points, or currency units); absent when none did',
        ),
    }),
  },
  'points.redeemed': {
    source: 'ledger.points_redeemed',
    summary: 'Points were redeemed for a reward.',
    data: z.object({
      ...movement,
      points: Points,
      reward_id: Id,
      reward_name: z.string(),
      reference: Reference,
      previous_balance: Points,
      new_balance: Points,
    }),
  },
  'points.refunded': {
    source: 'ledger.points_refunded',
    summary: 'Points were taken back for a refund.',
    data: z.object({
      ...movement,
      points: Points.describe('points deducted'),
      refund_amount: Money,
      uncovered: Points.describe('points the balance could not cover'),
      reference: Reference,
      previous_balance: Points,
      new_balance: Points,
    }),
  },
  'cashback.earned': {
    source: 'ledger.cashback_earned',
    summary: 'Cashback was earned for a purchase.',
    data: z.object({
      ...movement,
      amount: Money,
      purchase_amount: Money,
      cashback_percentage: z.number(),
      currency: z.string(),
      reference: Reference,
      previous_balance: Money.describe('spendable, before'),
      new_balance: Money.describe('spendable, after (unchanged when the cashback is pending)'),
      ...lotTerms,
      rules_applied: z
        .array(
          z.object({
            rule_id: Id,
            version: z.number().int(),
            name: z.string(),
            amount: z.number(),
            capped: z.boolean(),
          }),
        )
        .optional()
        .describe(
          'the earning rules beyond the base earn that gave something (points, or currency units); absent when none did',
        ),
    }),
  },
  'cashback.redeemed': {
    source: 'ledger.cashback_redeemed',
    summary: 'Cashback was redeemed.',
    data: z.object({
      ...movement,
      amount: Money,
      currency: z.string(),
      reference: Reference,
      previous_balance: Money,
      new_balance: Money,
    }),
  },
  'cashback.refunded': {
    source: 'ledger.cashback_refunded',
    summary: 'Cashback was taken back for a refund.',
    data: z.object({
      ...movement,
      amount: Money.describe('cashback deducted'),
      refund_amount: Money,
      uncovered: Money.describe('cashback the balance could not cover'),
      currency: z.string(),
      reference: Reference,
      previous_balance: Money,
      new_balance: Money,
    }),
  },
  'points.transferred': {
    source: 'ledger.points_transferred',
    summary:
      'A member transferred points to another member on a card (the lots moved keep their expiry); both balances after it.',
    data: z.object({
      transfer_id: Id,
      card_id: Id,
      from_member_id: Id,
      to_member_id: Id,
      points: Points,
      reference: z.string(),
      from_transaction_id: Id.describe("the sender's journal entry (points_transferred_out)"),
      to_transaction_id: Id.describe("the receiver's journal entry (points_transferred_in)"),
      from_balance: Points,
      to_balance: Points,
    }),
  },
  'rule.budget_exhausted': {
    source: 'ledger.rule_budget_exhausted',
    summary: "An earning rule's budget ran out: it gives nothing more until its budget is raised.",
    data: z.object({
      rule_id: Id,
      card_id: Id,
      version: z.number().int(),
      name: z.string(),
      budget: z.number().describe('points, or currency units on a cashback card'),
      member_id: Id.describe('the member whose earn spent the last of it'),
      transaction_id: Id.describe('that earn'),
    }),
  },
  'points.expiring': {
    source: 'ledger.points_expiring',
    summary:
      "A member's points expire soon: sent once per lot, the card's expiry_warning_days ahead (one event per member, card and day).",
    data: z.object({ ...warning, points: Points.describe('points that expire that day') }),
  },
  'points.expired': {
    source: 'ledger.points_expired',
    summary: 'What was left of lots of points expired (one event per member and card at once).',
    data: z.object({
      ...expiry,
      points: Points.describe('points that expired'),
      previous_balance: Points,
      new_balance: Points,
    }),
  },
  'cashback.expiring': {
    source: 'ledger.cashback_expiring',
    summary: "A member's cashback expires soon: sent once per lot, the card's expiry_warning_days ahead.",
    data: z.object({ ...warning, amount: Money.describe('cashback that expires that day'), currency: z.string() }),
  },
  'cashback.expired': {
    source: 'ledger.cashback_expired',
    summary: 'What was left of lots of cashback expired (one event per member and card at once).',
    data: z.object({
      ...expiry,
      amount: Money.describe('cashback that expired'),
      currency: z.string(),
      previous_balance: Money,
      new_balance: Money,
    }),
  },
  'tier.upgraded': {
    source: 'ledger.tier_upgraded',
    summary:
      "A member moved up a card's tiers: at once, in the earn (or counted bonus) that crossed the entry threshold (reason qualified), or set by hand (reason manual).",
    data: z.object({
      ...tierChange,
      transaction_id: Id.optional().describe('the earn that crossed the threshold (reason qualified)'),
    }),
  },
  'tier.renewed': {
    source: 'ledger.tier_renewed',
    summary: "A member's tier was reviewed at the end of its validity and kept for another period.",
    data: z.object({ ...tierChange, qualifying_total: z.number().describe('points, or currency units') }),
  },
  'tier.downgrade_warning': {
    source: 'ledger.tier_downgrade_warning',
    summary:
      "warning_days before a tier's review, the member has not yet met its retain threshold: what is still needed, and the tier the member would move to.",
    data: z.object({
      ...tierChange,
      qualifying_total: z.number().describe('points, or currency units, so far in the window judged at valid_until'),
      points_needed_to_retain: Points.optional().describe('ladders counting points'),
      amount_needed_to_retain: Money.optional().describe('ladders counting money (amount_spent, cashback cards)'),
    }),
  },
  'tier.downgraded': {
    source: 'ledger.tier_downgraded',
    summary:
      "A member moved down a card's tiers: at the review at the end of the tier's validity (reason review), or set by hand (reason manual).",
    data: z.object({ ...tierChange, qualifying_total: z.number().optional().describe('points, or currency units') }),
  },
  'claim.requested': {
    source: 'claims.claim_requested',
    summary: 'A member asked for a reward (a claim request waiting for staff).',
    data: claimData,
  },
  'claim.approved': {
    source: 'claims.claim_approved',
    summary: "Staff approved a claim request; the reward's points were deducted.",
    data: claimData,
  },
  'claim.rejected': {
    source: 'claims.claim_rejected',
    summary: 'Staff rejected a claim request; the member kept the points.',
    data: claimData,
  },
  'claim.expired': {
    source: 'claims.claim_expired',
    summary: 'A claim request expired before staff decided.',
    data: claimData,
  },
  'referral.applied': {
    source: 'referrals.referral_applied',
    summary: 'A referral code was applied to a new member.',
    data: referralData,
  },
  'referral.completed': {
    source: 'referrals.referral_completed',
    summary: 'Both parties of a referral received their bonus points.',
    data: referralData,
  },
  'audit.anchored': {
    source: 'identity.audit_anchored',
    summary:
      "The tenant's audit chain head, signed by the platform (sent when the chain grew since the last anchor, at most every AUDIT_ANCHOR_INTERVAL_MS). Keep `token`: a verification given it detects a chain rebuilt since.",
    data: z.object({
      seq: z.number().int().describe("the chain head's sequence number"),
      hash: z.string().describe("the chain head's hash"),
      anchored_at: Timestamp,
      key_id: z.string().describe('which audit key signed it (a fingerprint, not the key)'),
      signature: z.string().describe('HMAC-SHA256 (hex) under a key derived from the platform audit key'),
      token: z.string().describe('the anchor in one string, for `GET /staff/v1/audit/verify?anchor=`'),
    }),
  },
  ping: {
    source: null,
    summary: 'A test event, sent on request (`POST .../ping`).',
    data: z.object({ endpoint_id: Id, message: z.string() }),
  },
} as const satisfies Record<string, WebhookEventType>;

export type WebhookEventName = keyof typeof webhookEventTypes;
/** Whether `name` is one of the public event types (a name read from storage or a request). */
export function isWebhookEventName(name: string): name is WebhookEventName {
  return Object.hasOwn(webhookEventTypes, name);
}

export const webhookEventNames: WebhookEventName[] = Object.keys(webhookEventTypes).filter(isWebhookEventName);

/** The public type of a domain event type (`ledger.points_earned` -> `points.earned`); undefined: not delivered. */
export const webhookTypeOfDomainEvent: ReadonlyMap<string, WebhookEventName> = new Map(
  webhookEventNames.flatMap((name) => {
    const source: string | null = webhookEventTypes[name].source;
    return source === null ? [] : [[source, name] as const];
  }),
);

/** The body of every delivery: the same for every attempt of it, `id` stable (de-duplicate on it). */
export function webhookEnvelopeSchema(type: WebhookEventName) {
  return z.object({
    id: z.string().describe('the event id: the same on every attempt and redelivery; de-duplicate on it'),
    type: z.literal(type),
    created_at: Timestamp.describe('when it happened'),
    tenant_id: Id,
    data: webhookEventTypes[type].data,
  });
}

/** HTTP headers of every delivery. */
export const WEBHOOK_HEADERS = {
  signature: 'Loyalty-Signature',
  eventId: 'Loyalty-Event-Id',
  eventType: 'Loyalty-Event-Type',
} as const;
