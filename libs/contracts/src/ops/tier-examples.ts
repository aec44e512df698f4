import type { OperationExample } from './types.ts';

/** Examples of the tier operations (merged into examples.ts), for the merchant and the operator API. */
const at = '2026-03-14T09:26:53.000Z';
const request = {
  tiers: [
    { name: 'Bronze', rank: 0, entry_threshold: 0, retain_threshold: 0 },
    { name: 'Silver', rank: 1, entry_threshold: 1000, retain_threshold: 800, description: '1.5x points on coffee' },
    { name: 'Gold', rank: 2, entry_threshold: 5000, retain_threshold: 4000, description: 'Double points' },
  ],
  metric: 'points_earned',
  count_bonuses: true,
  window: 'rolling',
  window_days: 365,
  validity_days: null,
  warning_days: 30,
};
const settings = {
  card_id: 2,
  time_zone: 'Europe/Lisbon',
  enabled: true,
  tiers: [
    { name: 'Bronze', rank: 0, entry_threshold: 0, retain_threshold: 0, description: null, members: 1840 },
    {
      name: 'Silver',
      rank: 1,
      entry_threshold: 1000,
      retain_threshold: 800,
      description: '1.5x points on coffee',
      members: 212,
    },
    { name: 'Gold', rank: 2, entry_threshold: 5000, retain_threshold: 4000, description: 'Double points', members: 31 },
  ],
  metric: 'points_earned',
  count_bonuses: true,
  window: 'rolling',
  window_days: 365,
  validity_days: null,
  warning_days: 30,
  version: 3,
  updated_at: at,
};
const memberTier = {
  card_id: 2,
  member_id: 42,
  tier: { name: 'Silver', rank: 1, description: '1.5x points on coffee' },
  valid_until: '2027-03-15T00:00:00.000Z',
  manual: null,
  metric: 'points_earned',
  qualifying_total: 1380,
  window_start: '2025-03-15',
  window_end: '2026-03-15',
  next_tier: { name: 'Gold', rank: 2, entry_threshold: 5000 },
  needed_for_next: 3620,
  needed_to_retain: 800,
};

const manualExample: OperationExample = {
  request: { tier: 'Gold', valid_until: '2026-09-01T00:00:00Z', reason: 'Press partner for the summer' },
  response: {
    ...memberTier,
    tier: { name: 'Gold', rank: 2, description: 'Double points' },
    valid_until: '2026-09-01T00:00:00.000Z',
    manual: { reason: 'Press partner for the summer' },
    next_tier: null,
    needed_for_next: null,
    needed_to_retain: 2620,
  },
};
const putExample: OperationExample = {
  request,
  response: { ...settings, recompute_job_id: 'job_ledger_3f1c9a52-8d0e-4b7a-9c61-2a5e7d4b8f10' },
};

const tierExamples: Record<string, OperationExample> = {
  'tiers.get': { response: settings },
  'tiers.put': putExample,
  'tiers.member': { response: memberTier },
};

export const tierOperationExamples: Record<string, OperationExample> = {
  ...tierExamples,
  // The operator API's tier operations answer the same.
  ...Object.fromEntries(Object.entries(tierExamples).map(([id, e]) => [`admin.${id}`, e])),
  'admin.tiers.set': manualExample,
  'staff.tiers.get': { response: settings },
  'staff.tiers.put': putExample,
  'staff.tiers.member': { response: memberTier },
  'staff.tiers.set': manualExample,
};
