import * as z from 'zod';
import { Email, IdParam, Phone, Text, Timestamp } from '../common.ts';
import { Job } from './jobs.ts';
import { defineInternalOperations, defineOperations } from './types.ts';

/**
 * Members' data rights: erasure and export run as jobs of identity (which owns the member) that ask
 * every service for its part; consents are identity's records. Scope `members_manage`.
 */
const base = { service: 'identity', scope: 'members_manage', memberToken: false, tag: 'Member data' } as const;
const MemberParams = z.object({ member_id: IdParam });

/** What a member may consent to; transactional mail (codes, claim decisions) needs no consent. */
export const ConsentPurpose = z.enum(['marketing_email', 'marketing_sms']);
export type ConsentPurpose = z.infer<typeof ConsentPurpose>;

export const Consent = z
  .object({
    purpose: ConsentPurpose,
    granted: z.boolean(),
    granted_at: Timestamp.nullable().describe('the last time it was granted; null: never'),
    withdrawn_at: Timestamp.nullable().describe('the last time it was withdrawn; null: never'),
    source: z
      .string()
      .nullable()
      .describe(
        'where the last change came from: `registration`, `unsubscribe_link`, or what the app said (`api` by default); null: never asked',
      ),
    updated_at: Timestamp.nullable(),
  })
  .meta({ id: 'Consent' });

export const Consents = z.object({ member_id: z.number().int(), consents: z.array(Consent) });

/** The consents a change names (each purpose at most once; the others stay as they are). */
export const ConsentChanges = z
  .array(z.object({ purpose: ConsentPurpose, granted: z.boolean() }))
  .min(1)
  .max(2)
  .refine((list) => new Set(list.map((c) => c.purpose)).size === list.length, 'each purpose at most once');

/** Where the member gave or withdrew it (recorded with the change). */
export const ConsentSource = Text.trim()
  .min(1)
  .max(64)
  .regex(/^[a-z0-9_.-]+$/, 'lower-case letters, digits, `_`, `.` and `-`');

const ConsentsBody = z.object({
  consents: ConsentChanges,
  source: ConsentSource.default('api').describe(
    'where the member gave or withdrew it (`pos`, `app`, `web`, ...); recorded with the change',
  ),
});

export const memberDataOperations = defineOperations({
  'members.consents.get': {
    ...base,
    method: 'GET',
    path: '/api/v1/members/:member_id/consents',
    operation: 'members.consents.get',
    idempotent: false,
    summary:
      "A member's consents: marketing email and marketing SMS, with when and where each was granted or withdrawn",
    params: MemberParams,
    response: Consents,
    errors: ['member_not_found'],
  },
  'members.consents.update': {
    ...base,
    method: 'PUT',
    path: '/api/v1/members/:member_id/consents',
    operation: 'members.consents.update',
    idempotent: false,
    summary:
      'Grant or withdraw consents (the purposes named; the others stay as they are). Setting a consent to what it is changes nothing',
    params: MemberParams,
    body: ConsentsBody,
    response: Consents,
    errors: ['member_not_found'],
  },
  'members.erase': {
    ...base,
    method: 'POST',
    path: '/api/v1/members/:member_id/erase',
    operation: 'members.erase',
    idempotent: false,
    accepted: true,
    summary:
      "Erase a member's personal data in every service (a job): the member becomes a tombstone at once (404 member_not_found), their tokens stop, their email and phone are free again; ids, amounts and the journal stay. A second erase answers the same job",
    params: MemberParams,
    response: Job,
    errors: ['member_not_found'],
  },
  'members.export': {
    ...base,
    method: 'POST',
    path: '/api/v1/members/:member_id/export',
    operation: 'members.export',
    idempotent: false,
    accepted: true,
    summary:
      "Export everything every service holds about a member (a job): its result, downloaded at the job's result_url for 7 days, is one JSON document (profile, consents, sessions, accounts, journal, lots, holds, claims, referrals, audit entries, webhook deliveries)",
    params: MemberParams,
    response: Job,
    errors: ['member_not_found'],
  },
});

/** What an erasure removes from a service's records beyond the rows keyed by the member's id. */
export const PersonalData = z.object({
  name: Text.max(200).nullable(),
  email: Email.nullable(),
  phone: Phone.nullable(),
});
export type PersonalData = z.infer<typeof PersonalData>;

export const EraseMemberDataRequest = z.object({
  member_id: z.number().int().positive(),
  /** The member's name, email and phone as identity held them: free text carrying them is rewritten. */
  personal: PersonalData,
});
/** Rows changed per table (a repeated request changes nothing more and answers zeros). */
export const EraseMemberDataReply = z.object({ changed: z.record(z.string(), z.number().int()) });

export const ExportMemberDataRequest = z.object({
  member_id: z.number().int().positive(),
  /** Where the page starts (the last page's `next_cursor`); null for the first. */
  cursor: z.string().max(64).nullable(),
});
/** One page of one section of a service's part (rows as the service stores them, secrets left out). */
export const ExportMemberDataReply = z.object({
  section: z.string(),
  rows: z.array(z.record(z.string(), z.unknown())),
  next_cursor: z.string().nullable(),
});

const exportOf = <S extends 'ledger' | 'claims' | 'referrals' | 'webhooks'>(service: S) =>
  ({
    service,
    operation: 'internal.member_data.export',
    request: ExportMemberDataRequest,
    reply: ExportMemberDataReply,
  }) as const;

const eraseOf = <S extends 'ledger' | 'claims' | 'referrals' | 'webhooks'>(service: S) =>
  ({
    service,
    operation: 'internal.member_data.erase',
    request: EraseMemberDataRequest,
    reply: EraseMemberDataReply,
  }) as const;

/**
 * Each service's part of a member's erasure and export (identity's jobs call them in turn,
 * outside any transaction). Erase: anonymise the free text and payloads it holds about the member,
 * keep ids and amounts; idempotent, a repeated call finds nothing left to change. Export: one page
 * of what it holds about the member, from a cursor; it changes nothing.
 */
export const memberDataInternalOperations = defineInternalOperations({
  ledgerErase: eraseOf('ledger'),
  claimsErase: eraseOf('claims'),
  referralsErase: eraseOf('referrals'),
  webhooksErase: eraseOf('webhooks'),
  ledgerExport: exportOf('ledger'),
  claimsExport: exportOf('claims'),
  referralsExport: exportOf('referrals'),
  webhooksExport: exportOf('webhooks'),
});
