import { importInternalOperations, ISO_TIME_FORM, readIsoTime, type ServiceMeta } from '@loyalty/contracts';
import type { Queryable, RowProblem, ServiceClient } from '@loyalty/runtime';
import type { z } from 'zod';

/**
 * What the ledger's import kinds share: a line names its member by `member_external_id` or
 * `member_email` (identity resolves them, in batches, outside any transaction), times are ISO
 * 8601, and an unknown column is an error of a line that gives it a value.
 */
export interface MemberRef {
  member_external_id: string | null;
  member_email: string | null;
  member_id: number | null;
}

export type Problem = { column: string; reason: string };

const LOOKUP_BATCH = 5000;

/**
 * A line's time in `column`: an ISO 8601 date or time the calendar has (`readIsoTime`); `fallback`
 * when empty (none given: the column is required). Undefined, with the problem added, when it is not one.
 */
export function time(
  get: (k: string) => string,
  column: string,
  problems: Problem[],
  fallback?: Date | null,
): Date | null | undefined {
  const v = get(column);
  if (v === '') {
    if (fallback === undefined) problems.push({ column, reason: `is required: ${ISO_TIME_FORM}` });
    return fallback;
  }
  const read = readIsoTime(v);
  if ('at' in read) return read.at;
  problems.push({ column, reason: read.problem });
  return undefined;
}

/** The member a line names (member_external_id or member_email), to be resolved later. */
export function memberRef(get: (k: string) => string, problems: Problem[]): MemberRef {
  const external = get('member_external_id');
  const email = get('member_email').toLowerCase();
  if (external === '' && email === '')
    problems.push({ column: 'member_external_id', reason: 'member_external_id or member_email is required' });
  return {
    member_external_id: external === '' ? null : external,
    member_email: email === '' ? null : email,
    member_id: null,
  };
}

/** A line's external id: 1 to 200 visible ASCII characters. */
export function externalId(get: (k: string) => string, problems: Problem[]): string {
  const id = get('external_id');
  if (!/^[\x21-\x7e]{1,200}$/.test(id))
    problems.push({ column: 'external_id', reason: 'is required: 1 to 200 visible ASCII characters' });
  return id;
}

/**
 * Outside any transaction: the members the lines name, asked of identity (sets `member_id`; unknown
 * ones are problems). The batches of a step are asked at once: identity and PostgreSQL answer them
 * side by side instead of one core waiting on the other.
 */
export async function resolveMemberRefs(
  client: ServiceClient,
  rows: { line: number; row: MemberRef }[],
  ctx: { importId: string; tenantId: number },
): Promise<RowProblem[]> {
  const meta: ServiceMeta = { request_id: `import-${ctx.importId}`, tenant_id: ctx.tenantId };
  const parts: { line: number; row: MemberRef }[][] = [];
  for (let i = 0; i < rows.length; i += LOOKUP_BATCH) parts.push(rows.slice(i, i + LOOKUP_BATCH));
  const problems = await Promise.all(
    parts.map(async (part) =>
      applyLookup(
        part,
        await client.call(importInternalOperations.lookupMembers, meta, {
          external_ids: [...new Set(part.flatMap((r) => (r.row.member_external_id ? [r.row.member_external_id] : [])))],
          emails: [...new Set(part.flatMap((r) => (r.row.member_email ? [r.row.member_email] : [])))],
        }),
      ),
    ),
  );
  return problems.flat();
}

/** Set each line's member from identity's answer; a line naming nobody is a problem. */
function applyLookup(
  part: { line: number; row: MemberRef }[],
  found: z.output<typeof importInternalOperations.lookupMembers.reply>,
): RowProblem[] {
  const problems: RowProblem[] = [];
  const byId = new Map(found.by_external_id.map((m) => [m.external_id, m.member_id]));
  const byEmail = new Map(found.by_email.map((m) => [m.email, m.member_id]));
  for (const { line, row } of part) {
    const id = row.member_external_id ? byId.get(row.member_external_id) : byEmail.get(row.member_email ?? '');
    if (id !== undefined) row.member_id = id;
    else if (row.member_external_id)
      problems.push({
        line,
        column: 'member_external_id',
        reason: 'no member has this external_id (import members first)',
      });
    else problems.push({ line, column: 'member_email', reason: 'no member has this email' });
  }
  return problems;
}

/** The accounts of `members` on the card, opened if new and locked in member order (the step's writes to them serialize with postings). */
export async function lockAccounts(
  db: Queryable,
  k: { cardId: number | null; tenantId: number },
  members: number[],
  now: Date,
): Promise<Map<number, bigint>> {
  const sorted = [...new Set(members)].sort((a, b) => a - b);
  await db.query(
    `INSERT INTO ledger.accounts (card_id, member_id, tenant_id, created_at, updated_at)
     SELECT $1, m, $2, $3, $3 FROM unnest($4::bigint[]) m ORDER BY m ON CONFLICT DO NOTHING`,
    [k.cardId, k.tenantId, now, sorted],
  );
  const { rows } = await db.query<{ member_id: string; balance: string }>(
    `SELECT member_id::text, balance::text FROM ledger.accounts WHERE card_id = $1 AND member_id = ANY($2)
      ORDER BY member_id FOR UPDATE`,
    [k.cardId, sorted],
  );
  return new Map(rows.map((a) => [Number(a.member_id), BigInt(a.balance)]));
}
