import * as z from 'zod';
import { Id, IdParam, Text, Timestamp } from '../common.ts';
import { AppError } from '../errors.ts';
import type { ServiceName } from '../subjects.ts';
import { Job } from './jobs.ts';
import { defineInternalOperations, defineOperations } from './types.ts';

/**
 * Bulk imports (moving a programme in): a CSV or JSON Lines file streamed through the gateway to
 * the service that owns the data (members: identity; balances, tiers, history: the ledger), validated by a job,
 * then executed by another. An import's id names its service (`imp_<service>_<uuid>`), like a
 * job's, so the gateway routes it without a lookup.
 */
export const importKinds = {
  members: 'identity',
  balances: 'ledger',
  tiers: 'ledger',
  history: 'ledger',
} as const satisfies Record<string, ServiceName>;
export type ImportKind = keyof typeof importKinds;
export const IMPORT_MAX_BYTES = 2 * 1024 ** 3;
export const importContentTypes = ['text/csv', 'application/x-ndjson', 'application/jsonl'];

const IMPORT_ID = /^imp_(identity|ledger)_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;
const field = (params: unknown, name: string): unknown =>
  typeof params === 'object' && params !== null ? Object.entries(params).find(([k]) => k === name)?.[1] : undefined;

/** The service an import of this kind goes to; an unknown kind is 422 `unknown_import_kind`. */
export function importKindOwner(params: unknown): ServiceName {
  const kind = field(params, 'kind');
  const owner = Object.entries(importKinds).find(([k]) => k === kind)?.[1];
  if (owner) return owner;
  throw new AppError('unknown_import_kind', undefined, { kinds: Object.keys(importKinds) });
}

/** The service an import id names; a malformed one is an import that does not exist. */
export function importOwner(params: unknown): ServiceName {
  const id = field(params, 'import_id');
  const owner = typeof id === 'string' ? IMPORT_ID.exec(id)?.[1] : undefined;
  if (owner === 'identity' || owner === 'ledger') return owner;
  throw new AppError('import_not_found');
}

/** The uuid inside a public import id of `service`, or undefined. */
export function importRowId(service: ServiceName, publicId: string): string | undefined {
  const m = IMPORT_ID.exec(publicId);
  return m && m[1] === service ? m[2] : undefined;
}

export const ImportId = Text.max(100).describe('`imp_<service>_<uuid>`');

export const ImportRecord = z
  .object({
    id: ImportId,
    kind: z.enum(['members', 'balances', 'tiers', 'history']),
    card_id: Id.nullable(),
    format: z.enum(['csv', 'jsonl']),
    status: z
      .enum(['validating', 'invalid', 'validated', 'executing', 'executed', 'failed'])
      .describe(
        "validating → validated (no bad line) or invalid (bad lines: fix the file and upload it again); executing → executed; failed: its validate or execute job failed (the job's errors say why; upload the file again)",
      ),
    bytes: z.number().int(),
    counts: z.object({
      lines: z.number().int().describe('data lines read (the header excluded)'),
      valid: z.number().int(),
      invalid: z.number().int(),
      applied: z.number().int().describe('rows that changed something when executed'),
      unchanged: z.number().int().describe('rows already imported (same kind and external_id): nothing changed'),
    }),
    validate_job: Job,
    execute_job: Job.nullable(),
    created_at: Timestamp,
  })
  .meta({ id: 'Import' });

export const CreateQuery = z.object({
  kind: Text.max(40).describe('`members`, `balances`, `tiers` or `history`; anything else is 422 unknown_import_kind'),
  card_id: IdParam.optional().describe(
    'balances, tiers, history: the card they are on (404 card_not_found; tiers: 404 tiers_not_configured on a card without tiers)',
  ),
});
export const ImportParams = z.object({ import_id: ImportId });
export const importUpload = { contentTypes: importContentTypes, maxBytes: IMPORT_MAX_BYTES };
const common = { scope: 'programme_manage', memberToken: false, tag: 'Imports' } as const;

export const importOperations = defineOperations({
  'imports.create': {
    ...common,
    service: 'identity',
    route: importKindOwner,
    upload: importUpload,
    accepted: true,
    idempotent: false,
    method: 'POST',
    path: '/api/v1/imports',
    operation: 'imports.create',
    summary:
      'Upload a CSV or JSON Lines file of members, balances, tiers or past transactions (streamed, up to 2 GB); answers the import with its validate job',
    query: CreateQuery,
    response: ImportRecord,
    errors: [
      'unknown_import_kind',
      'card_not_found',
      'tiers_not_configured',
      'unsupported_media_type',
      'payload_too_large',
    ],
  },
  'imports.get': {
    ...common,
    service: 'identity',
    route: importOwner,
    idempotent: false,
    method: 'GET',
    path: '/api/v1/imports/:import_id',
    operation: 'imports.get',
    summary: 'An import: its status, counts and jobs (the validate job’s result is the error file)',
    params: ImportParams,
    response: ImportRecord,
    errors: ['import_not_found'],
  },
  'imports.execute': {
    ...common,
    service: 'identity',
    route: importOwner,
    accepted: true,
    idempotent: false,
    method: 'POST',
    path: '/api/v1/imports/:import_id/execute',
    operation: 'imports.execute',
    summary: 'Execute a validated import (a job); asking again answers the same job',
    params: ImportParams,
    response: ImportRecord,
    errors: ['import_not_found', 'import_not_validated'],
  },
});

const TenantParams = z.object({ tenant_id: IdParam });
const admin = { scope: null, memberToken: false, tag: 'Imports (operator)', idempotent: false } as const;

export const importAdminOperations = defineOperations({
  'admin.imports.create': {
    ...admin,
    service: 'identity',
    route: importKindOwner,
    upload: importUpload,
    accepted: true,
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/imports',
    operation: 'admin.imports.create',
    summary: 'Upload an import file for a tenant (as POST /api/v1/imports)',
    params: TenantParams,
    query: CreateQuery,
    response: ImportRecord,
    errors: [
      'invalid_operator_token',
      'tenant_not_found',
      'unknown_import_kind',
      'card_not_found',
      'tiers_not_configured',
      'unsupported_media_type',
      'payload_too_large',
    ],
  },
  'admin.imports.get': {
    ...admin,
    service: 'identity',
    route: importOwner,
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/imports/:import_id',
    operation: 'admin.imports.get',
    summary: "A tenant's import",
    params: TenantParams.extend(ImportParams.shape),
    response: ImportRecord,
    errors: ['invalid_operator_token', 'import_not_found'],
  },
  'admin.imports.execute': {
    ...admin,
    service: 'identity',
    route: importOwner,
    accepted: true,
    method: 'POST',
    path: '/admin/v1/tenants/:tenant_id/imports/:import_id/execute',
    operation: 'admin.imports.execute',
    summary: "Execute a tenant's validated import",
    params: TenantParams.extend(ImportParams.shape),
    response: ImportRecord,
    errors: ['invalid_operator_token', 'import_not_found', 'import_not_validated'],
  },
});

/**
 * One piece of an upload, as the gateway forwards it (`upload` operations): at most 384 KB of the
 * body, base64, numbered from 0; `last` ends the body and asks for the operation's answer.
 */
export const UploadChunk = z.object({
  id: z.uuid(),
  seq: z.number().int().min(0),
  data: z.string().max(600_000),
  last: z.boolean(),
  content_type: Text.max(200),
});
export const UPLOAD_CHUNK_BYTES = 384 * 1024;

/** Members by their external ids or emails (a balances import names its members so). */
export const importInternalOperations = defineInternalOperations({
  lookupMembers: {
    service: 'identity',
    operation: 'internal.member.lookup',
    request: z.object({
      external_ids: z.array(Text.max(200)).max(10_000),
      emails: z.array(Text.max(254)).max(10_000),
    }),
    reply: z.object({
      by_external_id: z.array(z.object({ external_id: z.string(), member_id: Id })),
      by_email: z.array(z.object({ email: z.string(), member_id: Id })),
    }),
  },
});
