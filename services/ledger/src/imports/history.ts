import {
  lineFields,
  type ImportKindSpec,
  type Pool,
  type RowProblem,
  type ServiceClient,
  type ServiceRuntime,
} from '@loyalty/runtime';
import { checkCard, unitProblems } from './balances.ts';
import {
  externalId as externalIdOf,
  lockAccounts,
  memberRef,
  resolveMemberRefs,
  time,
  type MemberRef,
  type Problem,
} from './member-refs.ts';

/**
 * The `history` import kind: a member's past transactions from the system the programme comes
 * from, shown in their history (after the journal's rows, newest first, with events
 * `imported_<type>`) and nothing else: no balance, lot, journal row, report figure, event or mail
 * comes from them (the balance comes in by the `balances` kind). One line per transaction:
 * `external_id`, the member, `type` (earned, redeemed, refunded, expired, adjusted), signed
 * `points` (points card) or `amount` (cashback card), and `occurred_at`. Idempotent by card and
 * external id (`import_keys`, kind `history`).
 */
interface HistoryRow extends MemberRef {
  external_id: string;
  event: string;
  points: number | null;
  cents: number | null;
  occurred_at: Date;
}

export const HISTORY_COLUMNS = [
  'external_id',
  'member_external_id',
  'member_email',
  'type',
  'points',
  'amount',
  'occurred_at',
];
/** The sign each type's amount must have (adjusted: either, not zero). */
const TYPES: Record<string, 1 | -1 | 0> = { earned: 1, redeemed: -1, refunded: -1, expired: -1, adjusted: 0 };
type Context = Parameters<ImportKindSpec<HistoryRow>['stage']>[2];
type Db = Parameters<ImportKindSpec<HistoryRow>['stage']>[0];
type Staged = { line: number; row: HistoryRow };

function signed(v: string, decimals: boolean): number | undefined {
  const re = decimals ? /^-?[0-9]{1,10}(\.[0-9]{1,2})?$/ : /^-?[0-9]{1,13}$/;
  if (!re.test(v)) return undefined;
  const n = decimals ? Math.round(Number(v) * 100) : Number(v);
  return n === 0 || Math.abs(n) > 1e12 ? undefined : n;
}

function parseHistory(fields: Map<string, string>, now: Date): HistoryRow | Problem[] {
  const problems: Problem[] = [];
  const get = lineFields(fields, HISTORY_COLUMNS, problems);
  const externalId = externalIdOf(get, problems);
  const member = memberRef(get, problems);
  const type = get('type').toLowerCase();
  const sign = TYPES[type];
  if (sign === undefined) problems.push({ column: 'type', reason: `must be one of ${Object.keys(TYPES).join(', ')}` });
  let points: number | null = null;
  let cents: number | null = null;
  if (get('points') !== '' && get('amount') !== '')
    problems.push({ column: 'amount', reason: 'give points or amount, not both' });
  else if (get('points') !== '') {
    points = signed(get('points'), false) ?? null;
    if (points === null)
      problems.push({ column: 'points', reason: 'must be a whole number, not 0 (negative for a deduction)' });
  } else if (get('amount') !== '') {
    cents = signed(get('amount'), true) ?? null;
    if (cents === null)
      problems.push({
        column: 'amount',
        reason: 'must be an amount, not 0, with at most two decimals (negative for a deduction)',
      });
  } else problems.push({ column: 'points', reason: 'points (points card) or amount (cashback card) is required' });
  const value = points ?? cents;
  if (sign !== undefined && sign !== 0 && value !== null && Math.sign(value) !== sign)
    problems.push({
      column: points !== null ? 'points' : 'amount',
      reason: sign > 0 ? `must be positive for ${type}` : `must be negative for ${type}`,
    });
  const occurredAt = time(get, 'occurred_at', problems);
  if (occurredAt && occurredAt > now) problems.push({ column: 'occurred_at', reason: 'must not be in the future' });
  if (problems.length > 0 || !occurredAt) return problems;
  return { external_id: externalId, ...member, event: `imported_${type}`, points, cents, occurred_at: occurredAt };
}

async function resolveHistory(pool: Pool, client: ServiceClient, rows: Staged[], ctx: Context): Promise<RowProblem[]> {
  const problems = await unitProblems(pool, rows, ctx);
  problems.push(...(await resolveMemberRefs(client, rows, ctx)));
  return problems;
}

/** Stage the good lines; a line repeating an external id of an earlier one is refused. */
async function stageHistory(db: Db, rows: Staged[], ctx: Context): Promise<RowProblem[]> {
  if (rows.length === 0) return [];
  const { rows: staged } = await db.query<{ line: string }>(
    `INSERT INTO ledger.import_history (import_id, line, external_id, member_id, event, amount, occurred_at)
     SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::bigint[], $7::timestamptz[])
     ON CONFLICT DO NOTHING RETURNING line::text`,
    [
      ctx.importId,
      rows.map((r) => r.line),
      rows.map((r) => r.row.external_id),
      rows.map((r) => r.row.member_id),
      rows.map((r) => r.row.event),
      rows.map((r) => r.row.points ?? r.row.cents),
      rows.map((r) => r.row.occurred_at),
    ],
  );
  const done = new Set(staged.map((s) => Number(s.line)));
  const problems: RowProblem[] = [];
  for (const { line, row } of rows.filter((r) => !done.has(r.line))) {
    const { rows: first } = await db.query<{ line: string }>(
      'SELECT line::text FROM ledger.import_history WHERE import_id = $1 AND external_id = $2',
      [ctx.importId, row.external_id],
    );
    problems.push({ line, column: 'external_id', reason: `repeats line ${first[0]?.line ?? '?'} of this file` });
  }
  return problems;
}

/**
 * The step's lines never imported on the card (claimed in import_keys) become history entries;
 * their accounts are opened if new (a history is shown for an account) and count them.
 */
async function mergeHistory(db: Db, after: number, upTo: number, ctx: Context, now: Date): Promise<number> {
  const { rows } = await db.query<{ member_id: string }>(
    `WITH batch AS (SELECT * FROM ledger.import_history WHERE import_id = $1 AND line > $2 AND line <= $3),
     fresh AS (
       INSERT INTO ledger.import_keys (tenant_id, card_id, kind, external_id)
       SELECT $4, $5, 'history', external_id FROM batch ORDER BY line ON CONFLICT DO NOTHING RETURNING external_id)
     SELECT b.member_id::text FROM batch b JOIN fresh f USING (external_id)`,
    [ctx.importId, after, upTo, ctx.tenantId, ctx.cardId],
  );
  if (rows.length === 0) return 0;
  const members = rows.map((r) => Number(r.member_id));
  await lockAccounts(db, ctx, members, now);
  await db.query(
    `WITH entry AS (
       INSERT INTO ledger.history_entries (tenant_id, card_id, member_id, event, amount, occurred_at, import_id, external_id)
       SELECT $1, $2, b.member_id, b.event, b.amount, b.occurred_at, b.import_id, b.external_id
         FROM ledger.import_history b
         JOIN ledger.import_keys k ON k.tenant_id = $1 AND k.card_id = $2 AND k.kind = 'history'
                                  AND k.external_id = b.external_id AND k.journal_id IS NULL
        WHERE b.import_id = $3 AND b.line > $4 AND b.line <= $5
        ORDER BY b.line
       RETURNING id, member_id, external_id),
     keyed AS (
       UPDATE ledger.import_keys k SET journal_id = e.id FROM entry e
        WHERE k.tenant_id = $1 AND k.card_id = $2 AND k.kind = 'history' AND k.external_id = e.external_id)
     UPDATE ledger.accounts a SET imported_entries = a.imported_entries + s.n
       FROM (SELECT member_id, count(*)::int AS n FROM entry GROUP BY member_id) s
      WHERE a.card_id = $2 AND a.member_id = s.member_id`,
    [ctx.tenantId, ctx.cardId, ctx.importId, after, upTo],
  );
  return rows.length;
}

export function historyImportSpec(rt: ServiceRuntime, client: ServiceClient): ImportKindSpec<HistoryRow> {
  return {
    staging: 'import_history',
    writes: ['ledger.import_keys', 'ledger.history_entries', 'ledger.accounts'],
    parse: (fields) => parseHistory(fields, rt.clock.now()),
    check: (db, ctx) => checkCard(db, ctx, 'history'),
    resolve: (rows, ctx) => resolveHistory(rt.pool, client, rows, ctx),
    stage: stageHistory,
    merge: (db, after, upTo, ctx) => mergeHistory(db, after, upTo, ctx, rt.clock.now()),
  };
}
