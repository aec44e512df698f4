import * as z from 'zod';
import { IdParam, Text } from '../common.ts';
import { AppError } from '../errors.ts';
import { parseIsoTime } from '../time.ts';
import type { ServiceName } from '../subjects.ts';
import { Job } from './jobs.ts';
import { defineOperations } from './types.ts';

/**
 * Exports (finance's way out): a tenant's journal, members, balances or lots as CSV or JSON Lines,
 * written page by page by the service that owns the rows (members: identity; the rest: the ledger)
 * and streamed to the client as it goes (`pagedDownload`), or as a job whose result is downloaded
 * later. The entity in the path names the owner, so the gateway routes it without a lookup.
 */
export const exportEntities = {
  journal: 'ledger',
  members: 'identity',
  balances: 'ledger',
  lots: 'ledger',
} as const satisfies Record<string, ServiceName>;
export type ExportEntity = keyof typeof exportEntities;
export const EXPORT_ENTITIES: ExportEntity[] = ['journal', 'members', 'balances', 'lots'];

/** The media type of each format (the Content-Type of the download and of the job's result). */
export const exportContentTypes = { csv: 'text/csv; charset=utf-8', jsonl: 'application/x-ndjson' } as const;

const field = (params: unknown, name: string): unknown =>
  typeof params === 'object' && params !== null ? Object.entries(params).find(([k]) => k === name)?.[1] : undefined;

/** The service that owns an export's rows; an unknown entity is 404 `unknown_export` (no such resource). */
export function exportOwner(params: unknown): ServiceName {
  const entity = field(params, 'entity');
  const owner = Object.entries(exportEntities).find(([k]) => k === entity)?.[1];
  if (owner) return owner;
  throw new AppError('unknown_export', undefined, { entities: EXPORT_ENTITIES });
}

/** Whether `v` is a real calendar date (YYYY-MM-DD) or an ISO 8601 instant with its offset. */
export function isExportTime(v: string): boolean {
  return parseIsoTime(v) !== undefined;
}

const ExportTime = Text.max(40).refine(isExportTime, {
  message: 'must be a date (YYYY-MM-DD) or an ISO 8601 instant with its offset (2024-03-01T10:00:00Z)',
});

export const ExportQuery = z.object({
  card_id: IdParam.optional().describe(
    'only this card (journal, balances, lots; 404 card_not_found for a card the tenant does not have)',
  ),
  from: ExportTime.optional().describe(
    'rows created at or after this instant (a date: its start, UTC); not for balances, which are as they stand now',
  ),
  to: ExportTime.optional().describe(
    'rows created before this instant (a date counts whole: before the next day starts, UTC); default: when the export started',
  ),
  format: z.enum(['jsonl', 'csv']).default('jsonl').describe('JSON Lines (default) or CSV (RFC 4180, a header line)'),
});
export const ExportParams = z.object({
  entity: Text.max(40).describe('`journal`, `members`, `balances` or `lots`; anything else is 404 unknown_export'),
});

const common = {
  service: 'ledger',
  route: exportOwner,
  scope: 'programme_manage',
  memberToken: false,
  idempotent: false,
  tag: 'Exports',
  params: ExportParams,
  query: ExportQuery,
} as const;
const errors = ['unknown_export', 'card_not_found'] as const;

export const exportOperations = defineOperations({
  'exports.download': {
    ...common,
    method: 'GET',
    path: '/api/v1/exports/:entity',
    operation: 'exports.download',
    pagedDownload: { contentTypes: Object.values(exportContentTypes) },
    summary:
      'Export the journal, members, balances or lots as JSON Lines or CSV, streamed as it is read (any size, constant memory)',
    response: z.string(),
    errors: [...errors],
  },
  'exports.create': {
    ...common,
    method: 'POST',
    path: '/api/v1/exports/:entity',
    operation: 'exports.create',
    accepted: true,
    summary:
      'The same export as a job (for large tenants): answers the job; its result (the file) is downloaded at result_url for 7 days',
    response: z.object({ job: Job }),
    errors: [...errors],
  },
});

const TenantParams = z.object({ tenant_id: IdParam });

/** The operator's export (`npm run admin -- export ...` streams it to a file): any tenant's, as the merchant API's. */
export const exportAdminOperations = defineOperations({
  'admin.exports.download': {
    ...common,
    scope: null,
    tag: 'Exports (operator)',
    method: 'GET',
    path: '/admin/v1/tenants/:tenant_id/exports/:entity',
    operation: 'admin.exports.download',
    pagedDownload: { contentTypes: Object.values(exportContentTypes) },
    summary:
      "Export a tenant's journal, members, balances or lots as JSON Lines or CSV, streamed as it is read (as GET /api/v1/exports/{entity})",
    params: ExportParams.extend(TenantParams.shape),
    response: z.string(),
    errors: ['invalid_operator_token', 'tenant_not_found', ...errors],
  },
});

/**
 * One page of a paged download over NATS: the operation's input plus `cursor` (null for the first
 * page, then the `next` of the page before). The reply's payload is the page's bytes as they are
 * (at most {@link DOWNLOAD_PAGE_BYTES}, so it fits one NATS message), described by this object as
 * JSON in the {@link DOWNLOAD_PAGE_HEADER} header; `next` null ends the file. A failure is an
 * ordinary reply message (JSON, no such header).
 */
export const DownloadPage = z.object({
  content_type: z.string(),
  filename: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/),
  rows: z.number().int().min(0),
  next: z.string().max(2000).nullable(),
});
export const DOWNLOAD_PAGE_HEADER = 'Loyalty-Download-Page';
export const DownloadCursor = z.object({ cursor: z.string().max(2000).nullable() });
export const DOWNLOAD_PAGE_BYTES = 512 * 1024;
