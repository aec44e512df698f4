import { AppError, Email, Phone, readIsoTime } from '@loyalty/contracts';
import { lineFields, type ImportKindSpec, type Pool, type RowProblem } from '@loyalty/runtime';

/**
 * The `members` import kind: `external_id`, `name`, `email`, `phone`, `joined_at`,
 * `accepts_emails` (consent to marketing mail). Merged by (tenant, external_id): a member with
 * that external id is updated (only when something differs), a member without one but with the
 * same email is adopted (given the external id), else a member is created. Imported members send
 * no events and no mail.
 */
interface MemberRow {
  external_id: string;
  name: string;
  email: string | null;
  phone: string | null;
  joined_at: Date;
  accepts_emails: boolean;
}

const TRUE = new Set(['true', '1', 'yes', 'y']);
const FALSE = new Set(['false', '0', 'no', 'n', '']);
export const MEMBER_COLUMNS = ['external_id', 'name', 'email', 'phone', 'joined_at', 'accepts_emails'];

function parseMember(fields: Map<string, string>, now: Date): MemberRow | { column: string; reason: string }[] {
  const problems: { column: string; reason: string }[] = [];
  const get = lineFields(fields, MEMBER_COLUMNS, problems);
  const externalId = get('external_id');
  if (!/^[\x21-\x7e]{1,200}$/.test(externalId))
    problems.push({ column: 'external_id', reason: 'is required: 1 to 200 visible ASCII characters' });
  const name = get('name');
  if (name === '' || name.length > 200 || name.includes('\0'))
    problems.push({ column: 'name', reason: 'is required, at most 200 characters' });
  let email: string | null = null;
  if (get('email') !== '') {
    const e = Email.safeParse(get('email'));
    if (e.success) email = e.data;
    else problems.push({ column: 'email', reason: 'is not a valid email address' });
  }
  let phone: string | null = null;
  if (get('phone') !== '') {
    const p = Phone.safeParse(get('phone'));
    if (p.success) phone = p.data;
    else
      problems.push({
        column: 'phone',
        reason: 'must be a phone number of 6 to 20 digits, optionally starting with +',
      });
  }
  let joinedAt = now;
  if (get('joined_at') !== '') {
    const t = readIsoTime(get('joined_at'));
    if (!('at' in t)) problems.push({ column: 'joined_at', reason: t.problem });
    else if (t.at > now) problems.push({ column: 'joined_at', reason: 'must not be in the future' });
    else joinedAt = t.at;
  }
  const consent = get('accepts_emails').toLowerCase();
  if (!TRUE.has(consent) && !FALSE.has(consent))
    problems.push({ column: 'accepts_emails', reason: 'must be true or false' });
  if (problems.length > 0) return problems;
  return { external_id: externalId, name, email, phone, joined_at: joinedAt, accepts_emails: TRUE.has(consent) };
}

export function memberImportSpec(now: () => Date): ImportKindSpec<MemberRow> {
  return {
    staging: 'import_members',
    writes: ['identity.members'],
    parse: (fields) => parseMember(fields, now()),
    stage: stageMembers,
    // Lines merged per execute step: one statement each, committed with its checkpoint.
    mergeBatch: 20_000,
    merge: mergeMembers,
    // The operator names the tenant: one that does not exist gets no import (its members could
    // never be written, the tenant's foreign key refuses them, and the execute job failed).
    // Members are not per card: a card_id given is not kept.
    async check(db, ctx) {
      const { rows } = await db.query('SELECT 1 FROM identity.tenants WHERE id = $1', [ctx.tenantId]);
      if (rows.length === 0) throw new AppError('tenant_not_found');
      ctx.cardId = null;
    },
  };
}

type Staged = { line: number; row: MemberRow };
type Context = Parameters<ImportKindSpec<MemberRow>['stage']>[2];
type Db = Parameters<ImportKindSpec<MemberRow>['stage']>[0];

/** The rows whose email or phone belongs to another member (one with another external id) are refused. */
async function withoutConflicts(db: Db, rows: Staged[], ctx: Context, problems: RowProblem[]): Promise<Staged[]> {
  const { rows: taken } = await db.query<{
    email: string | null;
    phone: string | null;
    external_id: string | null;
  }>(
    `SELECT email, phone, external_id FROM identity.members
      WHERE tenant_id = $1 AND (email = ANY($2) OR phone = ANY($3))`,
    [ctx.tenantId, rows.map((r) => r.row.email).filter(Boolean), rows.map((r) => r.row.phone).filter(Boolean)],
  );
  const emailOf = new Map(taken.filter((t) => t.email).map((t) => [t.email, t.external_id]));
  const phoneOf = new Map(taken.filter((t) => t.phone).map((t) => [t.phone, t.external_id]));
  const ok = rows.filter(({ line, row }) => {
    const e = row.email !== null && emailOf.has(row.email) ? emailOf.get(row.email) : undefined;
    const p = row.phone !== null && phoneOf.has(row.phone) ? phoneOf.get(row.phone) : undefined;
    // A member without an external id and this email is adopted; one with another id is someone else.
    if (e !== undefined && e !== null && e !== row.external_id)
      problems.push({ line, column: 'email', reason: 'belongs to another member' });
    // A phone of a member without an external id goes with that member's email (the adopted one).
    else if (p !== undefined && p !== row.external_id && !(p === null && e === null))
      problems.push({ line, column: 'phone', reason: 'belongs to another member' });
    else return true;
    return false;
  });
  return ok;
}

/** Stage the good rows; a row repeating an external id, email or phone of an earlier line is refused. */
async function stageMembers(db: Db, rows: Staged[], ctx: Context): Promise<RowProblem[]> {
  if (rows.length === 0) return [];
  const problems: RowProblem[] = [];
  const ok = await withoutConflicts(db, rows, ctx, problems);
  const { rows: staged } = await db.query<{ line: string }>(
    `INSERT INTO identity.import_members (import_id, line, external_id, name, email, phone, joined_at, accepts_emails)
     SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::boolean[])
     ON CONFLICT DO NOTHING RETURNING line::text`,
    [
      ctx.importId,
      ok.map((r) => r.line),
      ok.map((r) => r.row.external_id),
      ok.map((r) => r.row.name),
      ok.map((r) => r.row.email),
      ok.map((r) => r.row.phone),
      ok.map((r) => r.row.joined_at),
      ok.map((r) => r.row.accepts_emails),
    ],
  );
  const done = new Set(staged.map((s) => Number(s.line)));
  for (const { line, row } of ok) {
    if (done.has(line)) continue;
    const { rows: first } = await db.query<{ line: string; external_id: string; email: string | null }>(
      `SELECT line::text, external_id, email FROM identity.import_members
        WHERE import_id = $1 AND (external_id = $2 OR email = $3 OR phone = $4) ORDER BY line LIMIT 1`,
      [ctx.importId, row.external_id, row.email, row.phone],
    );
    const f = first[0];
    const column = f?.external_id === row.external_id ? 'external_id' : f?.email === row.email ? 'email' : 'phone';
    problems.push({ line, column, reason: `repeats line ${f?.line ?? '?'} of this file` });
  }
  return problems;
}

/** Merge staged lines: update by external id (only what differs), adopt by email, else create. */
async function mergeMembers(db: Db, after: number, upTo: number, ctx: Context): Promise<number> {
  const { rows } = await db.query<{ applied: string }>(
    `WITH batch AS (
       SELECT * FROM identity.import_members WHERE import_id = $1 AND line > $2 AND line <= $3),
     changed AS (
       UPDATE identity.members m SET name = b.name, email = b.email, phone = b.phone, accepts_emails = b.accepts_emails
         FROM batch b
        WHERE m.tenant_id = $4 AND m.external_id = b.external_id AND m.erased_at IS NULL
          AND (m.name, m.email, m.phone, m.accepts_emails) IS DISTINCT FROM (b.name, b.email, b.phone, b.accepts_emails)
       RETURNING m.id),
     adopted AS (
       UPDATE identity.members m SET external_id = b.external_id, name = b.name, phone = coalesce(b.phone, m.phone),
              accepts_emails = b.accepts_emails
         FROM batch b
        WHERE m.tenant_id = $4 AND m.external_id IS NULL AND m.email = b.email AND m.erased_at IS NULL
          AND NOT EXISTS (SELECT 1 FROM identity.members x WHERE x.tenant_id = $4 AND x.external_id = b.external_id)
       RETURNING m.id),
     created AS (
       INSERT INTO identity.members (tenant_id, name, email, phone, accepts_emails, created_at, external_id)
       SELECT $4, b.name, b.email, b.phone, b.accepts_emails, b.joined_at, b.external_id FROM batch b
        WHERE NOT EXISTS (SELECT 1 FROM identity.members m WHERE m.tenant_id = $4
                           AND (m.external_id = b.external_id OR (m.external_id IS NULL AND m.email = b.email)))
        ORDER BY b.line
       ON CONFLICT DO NOTHING RETURNING id)
     SELECT ((SELECT count(*) FROM changed) + (SELECT count(*) FROM adopted) + (SELECT count(*) FROM created))::text AS applied`,
    [ctx.importId, after, upTo, ctx.tenantId],
  );
  return Number(rows[0]?.applied ?? 0);
}

/** Members by external id and by email, for another service's import (balances name members so). */
export async function lookupMembers(pool: Pool, tenantId: number, d: { external_ids: string[]; emails: string[] }) {
  const [byId, byEmail] = await Promise.all([
    pool.query<{ external_id: string; member_id: string }>(
      `SELECT external_id, id::text AS member_id FROM identity.members
        WHERE tenant_id = $1 AND external_id = ANY($2) AND erased_at IS NULL`,
      [tenantId, d.external_ids],
    ),
    pool.query<{ email: string; member_id: string }>(
      `SELECT email, id::text AS member_id FROM identity.members WHERE tenant_id = $1 AND email = ANY($2) AND erased_at IS NULL`,
      [tenantId, d.emails.map((e) => e.trim().toLowerCase())],
    ),
  ]);
  return {
    by_external_id: byId.rows.map((r) => ({ external_id: r.external_id, member_id: Number(r.member_id) })),
    by_email: byEmail.rows.map((r) => ({ email: r.email, member_id: Number(r.member_id) })),
  };
}
