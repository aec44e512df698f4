import { z } from 'zod';
import { Id, IdParam } from '../common.ts';
import { Job } from './jobs.ts';
import { defineInternalOperations, defineOperations } from './types.ts';

/**
 * Merging a duplicate member into another of the same tenant (the member known by email at the
 * till and the one known by phone online): identity runs it as a job; the source becomes a
 * tombstone pointing at the target at once.
 */
const MemberParams = z.object({ member_id: IdParam });
const MergeBody = z.object({
  source_member_id: Id.describe('the duplicate: its balances, holds, claims and referrals move to member_id'),
});
const mergeSummary =
  "Merge a duplicate member (source_member_id) into this one (a job): the source's balances move as lots keeping their expiry and pending dates, its holds, pending claims and referrals follow, both histories show member_merged, the source becomes a tombstone (404 member_not_found) pointing at this member. Same tenant only; into itself is 422; a repeated request answers the same job";

export const memberMergeOperations = defineOperations({
  'members.merge': {
    service: 'identity',
    scope: 'members_manage',
    memberToken: false,
    tag: 'Member data',
    method: 'POST',
    path: '/api/v1/members/:member_id/merge',
    operation: 'members.merge',
    idempotent: false,
    accepted: true,
    summary: mergeSummary,
    params: MemberParams,
    body: MergeBody,
    response: Job,
    errors: ['member_not_found', 'merge_into_itself'],
  },
});

const mergeJob = {
  id: 'job_identity_5d0c7a1e-8f2b-4c3d-9e4f-0a1b2c3d4e5f',
  kind: 'member.merge',
  status: 'queued',
  progress: { done: 0, total: null },
  errors: [],
  created_at: '2026-03-14T09:26:53.000Z',
  finished_at: null,
};
export const memberMergeExamples = {
  'members.merge': { request: { source_member_id: 57 }, response: mergeJob },
};

/**
 * A member merge's parts in the services that hold a member's records (identity's merge job calls
 * them in turn, outside any transaction, with `meta.idempotency_key` = `<job id>:<service>`). Each
 * moves what the source member has to the target member and is idempotent by its state: a repeated
 * call finds nothing left to move and changes nothing.
 */
export const MergeMemberDataRequest = z.object({
  source_member_id: z.number().int().positive(),
  target_member_id: z.number().int().positive(),
});
/** Rows (or amounts) moved per kind; a repeated request answers zeros. */
export const MergeMemberDataReply = z.object({ moved: z.record(z.string(), z.number().int()) });

const mergeOf = <S extends 'ledger' | 'claims' | 'referrals'>(service: S) =>
  ({
    service,
    operation: 'internal.member_data.merge',
    request: MergeMemberDataRequest,
    reply: MergeMemberDataReply,
  }) as const;

export const memberMergeInternalOperations = defineInternalOperations({
  ledgerMerge: mergeOf('ledger'),
  claimsMerge: mergeOf('claims'),
  referralsMerge: mergeOf('referrals'),
});
