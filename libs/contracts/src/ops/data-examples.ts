import { exportContentTypes } from './exports.ts';
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

const validateJob = {
  id: 'job_identity_7c1e2d3a-91f4-4d6b-8a1e-2f7c9d3e4a11',
  kind: 'import.validate',
  status: 'succeeded' as const,
  progress: { done: 3, total: 3 },
  result_url: '/api/v1/jobs/job_identity_7c1e2d3a-91f4-4d6b-8a1e-2f7c9d3e4a11/result',
  errors: [
    {
      code: 'invalid_line',
      message: 'line 102, email: is not a valid email address',
      line: 102,
      column: 'email',
      reason: 'is not a valid email address',
    },
  ],
  created_at: '2026-11-25T10:00:00.000Z',
  finished_at: '2026-11-25T10:00:02.000Z',
};
const anImport = {
  id: 'imp_identity_2f0c5e7a-1b2c-4d3e-8f90-a1b2c3d4e5f6',
  kind: 'members' as const,
  card_id: null,
  format: 'csv' as const,
  status: 'invalid' as const,
  bytes: 1048576,
  counts: { lines: 10000, valid: 9999, invalid: 1, applied: 0, unchanged: 0 },
  validate_job: validateJob,
  execute_job: null,
  created_at: '2026-11-25T10:00:00.000Z',
};
const executing = {
  ...anImport,
  status: 'executing' as const,
  counts: { lines: 10000, valid: 10000, invalid: 0, applied: 0, unchanged: 0 },
  validate_job: { ...validateJob, errors: [] },
  execute_job: {
    ...validateJob,
    id: 'job_identity_9d2e3f4a-91f4-4d6b-8a1e-2f7c9d3e4a12',
    kind: 'import.execute',
    status: 'queued' as const,
    progress: { done: 0, total: 10000 },
    result_url: undefined,
    errors: [],
    finished_at: null,
  },
};

const created: OperationExample = {
  response: {
    ...anImport,
    status: 'validating' as const,
    validate_job: {
      ...validateJob,
      status: 'queued' as const,
      progress: { done: 0, total: null },
      result_url: undefined,
      errors: [],
      finished_at: null,
    },
    counts: { lines: 0, valid: 0, invalid: 0, applied: 0, unchanged: 0 },
  },
};

const report: OperationExample = {
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
};

/** A journal export, in each of its formats (the same two rows). */
const journalFile = {
  response:
    '{"id":1041,"card_id":2,"member_id":17,"event":"staff_added_points","amount":120,"balance_after":860,"purchase_amount":12.00,"reference":"till-4-0012","reward_id":null,"metadata":null,"created_at":"2026-11-25T10:00:00.123456Z"}\n' +
    '{"id":1042,"card_id":2,"member_id":17,"event":"reward_claimed","amount":-100,"balance_after":760,"purchase_amount":null,"reference":null,"reward_id":5,"metadata":null,"created_at":"2026-11-25T10:04:10.500000Z"}\n',
  byContentType: {
    [exportContentTypes.csv]:
      'id,card_id,member_id,event,amount,balance_after,purchase_amount,reference,reward_id,metadata,created_at\r\n' +
      '1041,2,17,staff_added_points,120,860,12.00,till-4-0012,,,2026-11-25T10:00:00.123456Z\r\n' +
      '1042,2,17,reward_claimed,-100,760,,,5,,2026-11-25T10:04:10.500000Z\r\n',
  },
};

export const dataOperationExamples: Record<string, OperationExample> = {
  'cards.report': report,
  'staff.cards.report': report,
  'admin.reports.rebuild': { request: { card_id: 2 }, response: { job: rebuildJob } },
  'imports.create': {
    response: {
      ...anImport,
      status: 'validating' as const,
      validate_job: {
        ...validateJob,
        status: 'queued' as const,
        progress: { done: 0, total: null },
        result_url: undefined,
        errors: [],
        finished_at: null,
      },
      counts: { lines: 0, valid: 0, invalid: 0, applied: 0, unchanged: 0 },
    },
  },
  'imports.get': { response: anImport },
  'imports.execute': { response: executing },
  'admin.imports.create': {
    response: {
      ...anImport,
      status: 'validating' as const,
      validate_job: {
        ...validateJob,
        status: 'queued' as const,
        progress: { done: 0, total: null },
        result_url: undefined,
        errors: [],
        finished_at: null,
      },
      counts: { lines: 0, valid: 0, invalid: 0, applied: 0, unchanged: 0 },
    },
  },
  'admin.imports.get': { response: anImport },
  'admin.imports.execute': { response: executing },
  // The console's (staff API): the error file is downloaded from the import itself.
  'staff.imports.create': created,
  'staff.imports.get': {
    response: { ...anImport, validate_job: { ...validateJob, result_url: `/staff/v1/imports/${anImport.id}/errors` } },
  },
  'staff.imports.execute': {
    response: { ...executing, validate_job: { ...validateJob, errors: [], result_url: undefined } },
  },
  'staff.imports.errors': { response: 'line,column,reason\n102,email,is not a valid email address\n' },
  'exports.download': journalFile,
  'admin.exports.download': journalFile,
  'staff.exports.download': journalFile,
  'exports.create': {
    response: {
      job: {
        id: 'job_ledger_0d8e6a3b-5c1f-4e2a-9b7d-1f3e5a7c9b20',
        kind: 'export.journal',
        status: 'queued' as const,
        progress: { done: 0, total: null },
        errors: [],
        created_at: '2026-11-25T10:00:00.000Z',
        finished_at: null,
      },
    },
  },
};
