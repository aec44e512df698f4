import type { OperationExample } from './types.ts';

/** Examples of the data-in-and-out operations: programme reports, imports, exports. */
const figures = { issued: 1200, redeemed: 300, expired: 50, refunded: 20, adjusted: 0, active_members: 41 };
const rebuildJob = {
  id: 'job_ledger_5b0f4c1e-2d3a-4c1e-9d1a-3c9d7f0e2b12',
  kind: 'reports.rebuild',
  status: 'queued' as const,
  progress: { done: 0, total: null },
  errors: [],
  created_at: '2026-11-25T10:00:00.000Z',
  finished_at: null,
};

export const dataOperationExamples: Record<string, OperationExample> = {
  'cards.report': {
    response: {
      card_id: 2,
      reward_system: 'points',
      currency: 'EUR',
      time_zone: 'Europe/Lisbon',
      from: '2026-11-01',
      to: '2026-11-30',
      granularity: 'month',
      periods: [{ start: '2026-11-01', ...figures }],
      totals: { ...figures, breakage: 0.041667, redemption_rate: 0.25 },
      outstanding: { balance: 830, liability: 8.3, point_value: 0.01 },
      top_rewards: [{ reward_id: 5, name: 'Free coffee', redemptions: 3, amount: 300 }],
    },
  },
  'admin.reports.rebuild': { request: { card_id: 2 }, response: { job: rebuildJob } },
};
