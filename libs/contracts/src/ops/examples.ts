import type { OperationExample } from './types.ts';
import { dataOperationExamples } from './data-examples.ts';
import { ruleOperationExamples } from './rule-examples.ts';
import { tierOperationExamples } from './tier-examples.ts';
import { webhookOperationExamples } from './webhook-examples.ts';

/**
 * One request and one success example per operation, shown in the reference. Values follow the
 * interface document where it shows them (masked contact data, `notification_sent: points_earned`,
 * event labels); the rest are realistic values of the schema. `libs/contracts/test/examples.test.ts`
 * validates every example against its operation's schemas.
 */
const at = '2026-03-14T09:26:53.000Z';
const later = '2026-03-14T09:36:53.000Z';
const maskedEmail = 'j***@example.com';
const maskedPhone = '+3***********67';
const member = { id: 42, name: 'Jane Doe', email: maskedEmail, phone: maskedPhone };
const token = {
  member_token: 'mt_3f6c1d0e9b2a4c7d8e5f6a1b2c3d4e5f',
  expires_at: '2026-03-15T09:26:53.000Z',
  expires_in_minutes: 1440,
};
const pagination = { limit: 20, offset: 0, total: 1, has_more: false };
const cashbackConfig = {
  cashback_percentage: 5,
  cashback_min_amount: 10,
  cashback_max_amount: null,
  allows_pin_redemption: false,
};
const claim = {
  id: 17,
  status: 'pending',
  member: { id: 42, name: 'Jane Doe', email: maskedEmail },
  card_id: 2,
  reward: { id: 5, name: 'Free coffee', points_cost: 100 },
  member_note: 'Oat milk, please',
  staff_note: null,
  points_deducted: null,
  created_at: at,
  approved_at: null,
  rejected_at: null,
  expires_at: '2026-03-17T09:26:53.000Z',
};
const tenant = {
  id: 1,
  name: 'Corner Coffee',
  sandbox: true,
  contact_email: 'it@corner-coffee.example',
  status: 'active',
  created_at: at,
};
const app = {
  app_id: 'app_7f3a9c2e5b1d',
  tenant_id: 1,
  name: 'Till',
  scopes: ['points_read', 'points_write'],
  created_at: at,
  revoked_at: null,
};
const appWithKey = { ...app, api_key: 'sk_live_5d2c8e1f7a9b3c4d6e0f1a2b3c4d5e6f' };
const card = {
  id: 2,
  tenant_id: 1,
  unique_identifier: 'coffee-points',
  name: 'Coffee points',
  description: 'One point per euro',
  reward_system: 'points',
  currency: 'EUR',
  cashback_config: null,
  points_ratio: 1,
  referrer_bonus: 100,
  referee_bonus: 50,
  referral_bonus_on_first_purchase: false,
  claim_lifetime_hours: 72,
  expiry_days: 365,
  pending_days: 14,
  expiry_warning_days: 14,
  transfers_enabled: false,
  transfer_monthly_cap: null,
  time_zone: 'UTC',
  point_value: null,
  created_at: at,
  updated_at: at,
};
const reward = {
  id: 5,
  card_id: 2,
  name: 'Free coffee',
  description: 'Any size',
  points_cost: 100,
  active: true,
  created_at: at,
  updated_at: at,
};

const exampleJob = {
  id: 'job_identity_0d5c1f9e-7d3a-4c1e-9d1a-3c9d7f0e2b11',
  kind: 'member.export',
  status: 'succeeded' as const,
  progress: { done: 5, total: 5 },
  result_url: '/api/v1/jobs/job_identity_0d5c1f9e-7d3a-4c1e-9d1a-3c9d7f0e2b11/result',
  errors: [],
  created_at: '2026-11-25T10:00:00.000Z',
  finished_at: '2026-11-25T10:00:04.000Z',
};

export const operationExamples: Record<string, OperationExample> = {
  'member.check': {
    request: { email: 'jane@example.com' },
    response: { exists: true, is_active: true, member: { email: maskedEmail, phone: maskedPhone } },
  },
  'member.register': {
    request: { name: 'Jane Doe', email: 'jane@example.com', phone: '+31612345667', accepts_emails: true },
    response: {
      message: 'Member registered. A one-time code was sent by email.',
      member,
      otp_expires_in_minutes: 10,
      otp_code: '482913',
    },
  },
  'member.request_otp': {
    request: { email: 'jane@example.com' },
    response: {
      message: 'A one-time code was sent by email.',
      expires_in_minutes: 10,
      member: { email: maskedEmail, phone: maskedPhone },
      otp_code: '482913',
    },
  },
  'member.verify_otp': {
    request: { email: 'jane@example.com', code: '482913' },
    response: { ...token, member },
  },
  'member.refresh': { response: token },
  'member.logout': { response: { message: 'Logged out. The member token no longer works.' } },
  'member.pin.set': { request: { pin: '4821' }, response: { pin_set: true, updated_at: at } },
  'claims.request_otp': {
    request: { member_email: 'jane@example.com', card_id: 2, reward_id: 5 },
    response: { expires_at: later, expires_in_minutes: 10, otp_code: '731205' },
    message: "A verification code was sent to the member's email.",
  },
  'claims.create': {
    request: {
      member_email: 'jane@example.com',
      card_id: 2,
      reward_id: 5,
      verification_code: '731205',
      member_note: 'Oat milk, please',
    },
    response: { claim_request: { id: 17, status: 'pending', created_at: at } },
  },
  'claims.list': { response: { card_id: 2, claim_requests: [claim], pagination } },
  'claims.get': { response: { claim_request: claim } },
  'claims.approve': {
    request: { staff_note: 'Served at the counter' },
    response: { claim_request: { id: 17, status: 'approved', points_deducted: 100, approved_at: later } },
  },
  'claims.reject': {
    request: { staff_note: 'Reward out of stock' },
    response: { claim_request: { id: 17, status: 'rejected', rejected_at: later } },
  },
  'referrals.code.get': { response: { referral_code: 'JANE7K2Q', card_id: 2, member_id: 42 } },
  'referrals.stats': {
    response: {
      stats: { total_referrals: 8, successful_referrals: 6, pending_referrals: 2, conversion_rate: 75 },
      period: '30d',
    },
  },
  'referrals.top_referrers': {
    response: {
      referrers: [{ member_id: 42, name: 'Jane Doe', email: maskedEmail, total_referrals: 8, successful_referrals: 6 }],
      total: 1,
    },
  },
  'referrals.of_referrer': {
    response: {
      referrals: [
        {
          id: 9,
          referee_name: 'Sam Lee',
          referee_email: 's***@example.com',
          status: 'completed',
          bonus_points: 100,
          created_at: at,
        },
      ],
      total: 1,
    },
  },
  'referrals.validate_code': {
    request: { referral_code: 'JANE7K2Q', card_id: 2 },
    response: {
      is_valid: true,
      referrer: { id: 42, name: 'Jane Doe', bonus_info: { referrer_bonus: 100, referee_bonus: 50 } },
    },
  },
  'referrals.apply': {
    request: { referral_code: 'JANE7K2Q', card_id: 2, referee_member_id: 57 },
    response: {
      referral: {
        id: 9,
        referrer_id: 42,
        referee_id: 57,
        referrer_bonus: 100,
        referee_bonus: 50,
        status: 'completed',
        created_at: at,
      },
    },
    message: 'Referral applied; bonus points were awarded to both members.',
  },
  'cashback.earn': {
    request: { card_id: 3, email: 'jane@example.com', purchase_amount: 49.9, reference: 'order-10023' },
    response: {
      transaction_id: 311,
      purchase_amount: 49.9,
      cashback_percentage: 5,
      cashback_earned: 2.49,
      new_balance: 12.74,
      member_id: 42,
      card_id: 3,
      is_new_member: false,
      reference: 'order-10023',
      earned_at: at,
    },
  },
  'cashback.redeem': {
    request: { card_id: 3, amount: 5, reference: 'order-10024' },
    response: {
      transaction_id: 312,
      amount_redeemed: 5,
      new_balance: 7.74,
      member_id: 42,
      card_id: 3,
      reference: 'order-10024',
      redeemed_at: later,
    },
  },
  'cashback.balance': {
    response: {
      card_id: 3,
      member_id: 42,
      cashback_balance: 12.74,
      pending_cashback: 2.49,
      held_cashback: 0,
      next_expiries: [{ amount: 4.1, expires_at: '2027-03-31T09:30:00.000Z' }],
      cashback_percentage: 5,
      currency: 'EUR',
      reward_system: 'cashback',
      queried_at: at,
    },
  },
  'cashback.history': {
    response: {
      card_id: 3,
      member_id: 42,
      transactions: [{ id: 311, type: 'earning', amount: 2.49, points: 0, event: 'cashback_earned', created_at: at }],
      pagination,
    },
  },
  'cashback.refund': {
    request: { card_id: 3, email: 'jane@example.com', refund_amount: 49.9, reference: 'order-10023' },
    response: {
      transaction_id: 313,
      cashback_deducted: 2.49,
      refund_amount: 49.9,
      previous_balance: 12.74,
      new_balance: 10.25,
      currency: 'EUR',
      member_id: 42,
      card_id: 3,
      reference: 'order-10023',
      balance_warning: null,
      refunded_at: later,
    },
  },
  'cashback.cards': {
    response: {
      cards: [
        {
          id: 3,
          unique_identifier: 'coffee-cashback',
          name: 'Coffee cashback',
          description: '5% back on every purchase over 10 EUR',
          reward_system: 'cashback',
          currency: 'EUR',
          cashback_config: cashbackConfig,
        },
      ],
      total: 1,
    },
  },
  'points.earn': {
    request: {
      card_id: 2,
      email: 'jane@example.com',
      member_name: 'Jane Doe',
      purchase_amount: 23.5,
      reference: 'order-10025',
    },
    response: {
      transaction_id: 320,
      points_earned: 23,
      new_balance: 100,
      member_id: 42,
      card_id: 2,
      is_new_member: false,
      notification_sent: 'points_earned',
      reference: 'order-10025',
      earned_at: at,
      pending_points: 23,
      available_at: '2026-03-28T09:26:53.000Z',
      expires_at: '2027-03-28T09:26:53.000Z',
    },
  },
  'points.redeem': {
    request: { card_id: 2, reward_id: 5, reference: 'order-10026' },
    response: {
      transaction_id: 321,
      reward_id: 5,
      reward_name: 'Free coffee',
      points_redeemed: 100,
      new_balance: 23,
      member_id: 42,
      card_id: 2,
      reference: 'order-10026',
      redeemed_at: later,
    },
  },
  'points.refund': {
    request: { card_id: 2, member_id: 42, refund_amount: 23.5, reference: 'order-10025' },
    response: {
      transaction_id: 322,
      points_deducted: 23,
      refund_amount: 23.5,
      previous_balance: 123,
      new_balance: 100,
      member_id: 42,
      card_id: 2,
      reference: 'order-10025',
      balance_warning: null,
      refunded_at: later,
    },
  },
  'points.balance': {
    response: {
      card_id: 2,
      member_id: 42,
      points_balance: 123,
      pending_points: 23,
      held_points: 100,
      next_expiries: [
        { points: 40, expires_at: '2027-01-31T09:30:00.000Z' },
        { points: 83, expires_at: '2027-03-02T14:05:00.000Z' },
      ],
      reward_system: 'points',
      queried_at: at,
    },
  },
  'points.quote': {
    request: { operation: 'earn', card_id: 2, member_id: 42, purchase_amount: 23.5 },
    response: {
      operation: 'earn',
      card_id: 2,
      member_id: 42,
      is_new_member: false,
      would_succeed: true,
      available_at: '2026-03-28T09:26:53.000Z',
      expires_at: '2027-03-28T09:26:53.000Z',
      warnings: [],
      points: 23,
      points_balance: 123,
      new_balance: 123,
      pending_points: 0,
      new_pending_points: 23,
    },
  },
  'cashback.quote': {
    request: { operation: 'redeem', card_id: 3, member_id: 42, amount: 20 },
    response: {
      operation: 'redeem',
      card_id: 3,
      member_id: 42,
      is_new_member: false,
      would_succeed: false,
      available_at: null,
      expires_at: null,
      warnings: [{ code: 'insufficient_balance', message: 'The spendable balance does not cover the redemption.' }],
      amount: 20,
      cashback_balance: 12.74,
      new_balance: 12.74,
      pending_cashback: 2.49,
      new_pending_cashback: 2.49,
      currency: 'EUR',
    },
  },
  'points.history': {
    response: {
      card_id: 2,
      member_id: 42,
      transactions: [{ id: 320, points: 23, event: 'staff_added_points', created_at: at }],
      pagination,
    },
  },
  'admin.tenant.create': {
    request: { name: 'Corner Coffee', sandbox: true, contact_email: 'it@corner-coffee.example' },
    response: { tenant },
  },
  'admin.tenant.update': { request: { contact_email: 'it@corner-coffee.example' }, response: { tenant } },
  'admin.tenant.list': { response: { tenants: [tenant] } },
  'admin.app.create': {
    request: { name: 'Till', scopes: ['points_read', 'points_write'] },
    response: { app: appWithKey },
  },
  'admin.app.list': { response: { apps: [app] } },
  'admin.app.rotate_key': { response: { app: appWithKey } },
  'admin.app.revoke': { response: { app: { ...app, revoked_at: later } } },
  'admin.card.create': {
    request: {
      name: 'Coffee points',
      description: 'One point per euro',
      unique_identifier: 'coffee-points',
      reward_system: 'points',
      currency: 'EUR',
      points_ratio: 1,
      referrer_bonus: 100,
      referee_bonus: 50,
    },
    response: { card },
  },
  'admin.card.update': {
    request: { claim_lifetime_hours: 48 },
    response: { card: { ...card, claim_lifetime_hours: 48 } },
  },
  'admin.card.list': { response: { cards: [card], total: 1 } },
  'admin.card.get': { response: { card, rewards: [reward] } },
  'admin.reward.create': {
    request: { name: 'Free coffee', description: 'Any size', points_cost: 100 },
    response: { reward },
  },
  'admin.reward.list': { response: { rewards: [reward], total: 1 } },
  'admin.reward.update': { request: { active: false }, response: { reward: { ...reward, active: false } } },
  ...webhookOperationExamples,
  ...ruleOperationExamples,
  ...tierOperationExamples,
  'jobs.get': { response: exampleJob },
  'jobs.result': { response: '{"member":{"id":42}}' },
  'admin.jobs.get': { response: { ...exampleJob, result_url: `/admin/v1/jobs/${exampleJob.id}/result`, tenant_id: 1 } },
  'admin.jobs.result': { response: '{"member":{"id":42}}' },
  'members.consents.get': {
    response: {
      member_id: 42,
      consents: [
        {
          purpose: 'marketing_email',
          granted: true,
          granted_at: '2026-03-14T09:26:53.000Z',
          withdrawn_at: null,
          source: 'registration',
          updated_at: '2026-03-14T09:26:53.000Z',
        },
        {
          purpose: 'marketing_sms',
          granted: false,
          granted_at: null,
          withdrawn_at: null,
          source: null,
          updated_at: null,
        },
      ],
    },
  },
  'members.consents.update': {
    request: { consents: [{ purpose: 'marketing_email', granted: false }], source: 'pos' },
    response: {
      member_id: 42,
      consents: [
        {
          purpose: 'marketing_email',
          granted: false,
          granted_at: '2026-03-14T09:26:53.000Z',
          withdrawn_at: '2026-11-25T10:00:00.000Z',
          source: 'pos',
          updated_at: '2026-11-25T10:00:00.000Z',
        },
        {
          purpose: 'marketing_sms',
          granted: false,
          granted_at: null,
          withdrawn_at: null,
          source: null,
          updated_at: null,
        },
      ],
    },
  },
  'members.export': {
    response: {
      id: 'job_identity_8c2d4e6f-1a3b-4c5d-9e7f-0a1b2c3d4e5f',
      kind: 'member.export',
      status: 'queued' as const,
      progress: { done: 0, total: null },
      errors: [],
      created_at: '2026-11-25T10:00:00.000Z',
      finished_at: null,
    },
  },
  'members.erase': {
    response: {
      id: 'job_identity_5b0e3c2a-91f4-4d6b-8a1e-2f7c9d3e4a10',
      kind: 'member.erase',
      status: 'queued' as const,
      progress: { done: 0, total: null },
      errors: [],
      created_at: '2026-11-25T10:00:00.000Z',
      finished_at: null,
    },
  },
  ...dataOperationExamples,
};
