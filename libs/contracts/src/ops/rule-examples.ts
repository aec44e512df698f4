import type { OperationExample } from './types.ts';

/** Examples of the earning rule operations (merged into examples.ts), for the merchant and the operator API. */
const at = '2026-03-14T09:26:53.000Z';
const later = '2026-03-14T10:02:11.000Z';
const request = {
  name: 'Double points on pastries at weekends',
  kind: 'multiplier',
  factor: 2,
  priority: 10,
  combination: 'stack',
  conditions: { categories: ['pastry'], days_of_week: ['sat', 'sun'] },
  cap: { limit: 500, period: 'month' },
  status: 'active',
};
const rule = {
  id: 7,
  card_id: 2,
  status: 'active',
  version: 1,
  name: 'Double points on pastries at weekends',
  kind: 'multiplier',
  priority: 10,
  combination: 'stack',
  group: 'default',
  replaces_base: false,
  factor: 2,
  conditions: { categories: ['pastry'], days_of_week: ['sat', 'sun'] },
  cap: { limit: 500, period: 'month' },
  budget: null,
  budget_used: 0,
  created_at: at,
  updated_at: at,
};
const edited = { ...rule, version: 2, factor: 3, updated_at: later };

const ruleExamples: Record<string, OperationExample> = {
  'rules.list': { response: { card_id: 2, time_zone: 'Europe/Lisbon', rules: [rule], total: 1 } },
  'rules.create': { request, response: { rule } },
  'rules.get': {
    response: {
      rule: edited,
      versions: [
        { version: 1, created_at: at },
        { version: 2, created_at: later },
      ],
    },
  },
  'rules.update': { request: { factor: 3 }, response: { rule: edited } },
  'rules.delete': { response: { rule_id: 7, deleted: false, status: 'ended' } },
  'rules.activate': { response: { rule } },
  'rules.pause': { response: { rule: { ...rule, status: 'paused', updated_at: later } } },
};

export const ruleOperationExamples: Record<string, OperationExample> = {
  ...ruleExamples,
  'points.events': {
    request: { card_id: 2, member_id: 42, event: 'birthday', reference: 'birthday-42-2026' },
    response: {
      card_id: 2,
      member_id: 42,
      event: 'birthday',
      reference: 'birthday-42-2026',
      points_earned: 50,
      transaction_id: 1289,
      new_balance: 173,
      rules_applied: [{ rule_id: 9, version: 1, name: 'Birthday gift', points: 50, capped: false }],
      replayed: false,
    },
  },
  // The operator API's rule operations answer the same.
  ...Object.fromEntries(Object.entries(ruleExamples).map(([id, e]) => [`admin.${id}`, e])),
};
