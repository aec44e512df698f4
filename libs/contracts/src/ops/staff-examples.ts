import { ruleOperationExamples } from './rule-examples.ts';
import type { OperationExample } from './types.ts';

/** A request and a success example per staff API operation (validated by libs/contracts/test/examples.test.ts). */
const at = '2026-03-14T09:26:53.000Z';
const later = '2026-03-14T09:36:53.000Z';
const pagination = { limit: 20, offset: 0, total: 1, has_more: false };
const manager = {
  id: 3,
  tenant_id: 1,
  email: 'maria@cornercoffee.example',
  name: 'Maria Lopez',
  role: 'manager',
  active: true,
  created_at: at,
  last_sign_in_at: later,
};
const clerk = { ...manager, id: 4, email: 'tom@cornercoffee.example', name: 'Tom Berg', role: 'staff' };
const member = {
  id: 42,
  name: 'Jane Doe',
  email: 'jane@example.com',
  phone: '+31612345667',
  is_active: true,
  created_at: at,
};
const claim = {
  id: 17,
  status: 'pending',
  member: { id: 42, name: 'Jane Doe', email: 'j***@example.com' },
  card_id: 2,
  reward: { id: 5, name: 'Free coffee', points_cost: 100 },
  member_note: 'Oat milk, please',
  staff_note: null,
  points_deducted: null,
  created_at: at,
  approved_at: null,
  rejected_at: null,
  expires_at: '2026-03-17T09:26:53.000Z',
  member_points_balance: 340,
};
const stats = { total_referrals: 8, successful_referrals: 6, pending_referrals: 2, conversion_rate: 75 };
const verification = {
  valid: true,
  rows_checked: 128,
  head: { seq: 128, hash: '9f2c4e1a7b3d5f60819a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70' },
  problem: null,
  legacy_rows: 40,
  keyed_from: 41,
  erased_details: 1,
  anchors_checked: 3,
};

/** The merchant API's example of a rule operation, which the staff API's answers like. */
function ruleExample(id: string): OperationExample {
  const e = ruleOperationExamples[id];
  if (e === undefined) throw new Error(`no example of ${id}`);
  return e;
}

export const staffOperationExamples: Record<string, OperationExample> = {
  'staff.rules.list': ruleExample('rules.list'),
  'staff.rules.create': ruleExample('rules.create'),
  'staff.rules.activate': ruleExample('rules.activate'),
  'staff.rules.pause': ruleExample('rules.pause'),
  'staff.rules.preview': {
    request: {
      purchase_amount: 12.5,
      line_items: [
        { sku: 'croissant', category: 'pastry', quantity: 2, unit_price: 2.5 },
        { sku: 'latte', category: 'drink', quantity: 1, unit_price: 7.5 },
      ],
    },
    response: {
      card_id: 2,
      total: 17,
      base: 12,
      rules_applied: [{ rule_id: 7, version: 1, name: 'Double points on pastries', points: 5, capped: false }],
      trace: [
        {
          rule_id: 7,
          version: 1,
          name: 'Double points on pastries',
          kind: 'multiplier',
          combination: 'stack',
          priority: 10,
          status: 'draft',
          matched: true,
          reason: null,
          computed: 5,
          gave: 5,
          capped: false,
          cap: null,
          budget: null,
        },
      ],
    },
  },
  'staff.auth.request_code': {
    request: { tenant_id: 1, email: 'maria@cornercoffee.example' },
    response: {
      message: 'If this email belongs to a staff user, a code was sent.',
      expires_in_minutes: 10,
      code: '482913',
    },
  },
  'staff.auth.verify_code': {
    request: { tenant_id: 1, email: 'maria@cornercoffee.example', code: '482913' },
    response: {
      staff_token: 'st_Qm9y4d0x3Jc8Lr2T7w1Zk5Hs6Nv9Pb0Ae4Gf8Du3Yi',
      expires_at: '2026-03-14T21:26:53.000Z',
      expires_in_minutes: 720,
      staff: manager,
    },
  },
  'staff.auth.logout': { response: { message: 'Signed out. The staff token no longer works.' } },
  'staff.me': { response: { staff: manager, tenant: { id: 1, name: 'Corner Coffee', sandbox: true } } },
  'staff.team.list': { response: { staff: [manager, clerk] } },
  'staff.team.invite': {
    request: { email: 'tom@cornercoffee.example', name: 'Tom Berg', role: 'staff' },
    response: { staff: { ...clerk, last_sign_in_at: null } },
  },
  'staff.team.update': { request: { active: false }, response: { staff: { ...clerk, active: false } } },
  'staff.members.find': { response: { member } },
  'staff.members.get': { response: { member } },
  'staff.members.merge': {
    request: { source_member_id: 57 },
    response: {
      id: 'job_identity_5d0c7a1e-8f2b-4c3d-9e4f-0a1b2c3d4e5f',
      kind: 'member.merge',
      status: 'queued',
      progress: { done: 0, total: null },
      errors: [],
      created_at: '2026-03-14T09:26:53.000Z',
      finished_at: null,
    },
  },
  'staff.members.consents': {
    response: {
      member_id: 42,
      consents: [
        {
          purpose: 'marketing_email',
          granted: true,
          granted_at: at,
          withdrawn_at: null,
          source: 'registration',
          updated_at: at,
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
  'staff.members.consents.update': {
    request: { consents: [{ purpose: 'marketing_sms', granted: true }], source: 'console' },
    response: {
      member_id: 42,
      consents: [
        {
          purpose: 'marketing_email',
          granted: true,
          granted_at: at,
          withdrawn_at: null,
          source: 'registration',
          updated_at: at,
        },
        {
          purpose: 'marketing_sms',
          granted: true,
          granted_at: later,
          withdrawn_at: null,
          source: 'console',
          updated_at: later,
        },
      ],
    },
  },
  'staff.cards.list': {
    response: {
      cards: [
        { id: 2, name: 'Coffee points', unique_identifier: 'coffee-points', reward_system: 'points', currency: 'EUR' },
        {
          id: 3,
          name: 'Coffee cashback',
          unique_identifier: 'coffee-back',
          reward_system: 'cashback',
          currency: 'EUR',
        },
      ],
    },
  },
  'staff.members.balances': {
    response: {
      member_id: 42,
      balances: [
        { card_id: 2, card_name: 'Coffee points', reward_system: 'points', currency: 'EUR', points_balance: 340 },
        {
          card_id: 3,
          card_name: 'Coffee cashback',
          reward_system: 'cashback',
          currency: 'EUR',
          cashback_balance: 12.74,
        },
      ],
    },
  },
  'staff.members.history': {
    response: {
      card_id: 2,
      member_id: 42,
      reward_system: 'points',
      transactions: [{ id: 311, event: 'staff_added_points', points: 50, amount: 0, created_at: at }],
      pagination,
    },
  },
  'staff.members.referrals': {
    response: {
      card_id: 2,
      member_id: 42,
      referral_code: 'JANE7K2Q',
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
  'staff.adjustments.create': {
    request: { card_id: 2, member_id: 42, direction: 'add', points: 50, reason: 'Coffee machine broke, apology' },
    response: {
      adjustment: {
        transaction_id: 312,
        card_id: 2,
        member_id: 42,
        direction: 'add',
        points: 50,
        previous_balance: 340,
        new_balance: 390,
        reason: 'Coffee machine broke, apology',
        created_at: later,
      },
    },
  },
  'staff.claims.list': { response: { claim_requests: [claim], pagination } },
  'staff.claims.approve': {
    request: { note: 'Served at the counter' },
    response: {
      claim_request: {
        ...claim,
        status: 'approved',
        staff_note: 'Served at the counter',
        points_deducted: 100,
        approved_at: later,
        member_points_balance: 240,
      },
    },
  },
  'staff.claims.reject': {
    request: { note: 'Reward out of stock' },
    response: {
      claim_request: { ...claim, status: 'rejected', staff_note: 'Reward out of stock', rejected_at: later },
    },
  },
  'staff.referrals.dashboard': {
    response: {
      card_id: 2,
      periods: [
        {
          period: '7d',
          stats: { total_referrals: 2, successful_referrals: 1, pending_referrals: 1, conversion_rate: 50 },
        },
        { period: '30d', stats },
        { period: '90d', stats },
        { period: 'all', stats },
      ],
      top_referrers: [
        { member_id: 42, name: 'Jane Doe', email: 'j***@example.com', total_referrals: 8, successful_referrals: 6 },
      ],
      period: '30d',
    },
  },
  'staff.audit.list': {
    response: {
      entries: [
        {
          seq: 128,
          occurred_at: later,
          recorded_at: later,
          actor: { type: 'staff', id: 3, email: 'maria@cornercoffee.example', role: 'manager' },
          action: 'balance.adjusted',
          target: { member_id: 42, card_id: 2, transaction_id: 312 },
          amounts: { points: 50 },
          details: { reason: 'Coffee machine broke, apology' },
          details_erased_at: null,
          request_id: '1f0c9a52-3c55-4c1e-9a8e-3c1f2b6d7e90',
          service: 'ledger',
          prev_hash: '1b4e2c3d4e5f60718293a4b5c6d7e8f9011a2b3c4d5e6f708192a3b4c5d6e7f8',
          hash: '9f2c4e1a7b3d5f60819a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70',
          chain_version: 3,
        },
      ],
      pagination: { limit: 50, offset: 0, total: 1, has_more: false },
    },
  },
  'staff.audit.verify': { response: verification },
  'admin.staff.create': {
    request: { email: 'maria@cornercoffee.example', name: 'Maria Lopez', role: 'manager' },
    response: { staff: { ...manager, last_sign_in_at: null } },
  },
  'admin.staff.list': { response: { staff: [manager, clerk] } },
  'admin.audit.verify': { response: verification },
};
