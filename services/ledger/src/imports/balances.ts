import { AppError } from '@loyalty/contracts';
import {
  lineFields,
  type ImportKindSpec,
  type Pool,
  type Queryable,
  type RowProblem,
  type ServiceClient,
  type ServiceRuntime,
} from '@loyalty/runtime';
import {
  externalId as externalIdOf,
  memberRef,
  resolveMemberRefs,
  time,
  type MemberRef,
  type Problem,
} from './member-refs.ts';

/**
 * The `balances` import kind: one line per balance to bring in (a lot): `external_id`, the member
 * (`member_external_id` or `member_email`), `points` (points card) or `amount` (cashback card,
 * currency units), `earned_at`, `available_at` (pending until then) and `expires_at` (never
 * when empty). Each line becomes a journal row (a staff adjustment whose metadata names the
 * import, so history and reports show it as imported) and its lot, the account's balances moving
 * with them, in the step's transaction; `import_keys` keeps every external id applied on the card,
 * so a line already imported changes nothing.
 */
interface BalanceRow extends MemberRef {
  external_id: string;
  points: number | null;
  cents: number | null;
  earned_at: Date;
  available_at: Date;
  expires_at: Date | null;
}

export const BALANCE_COLUMNS = [
  'external_id',
  'member_external_id',
  'member_email',
  'points',
  'amount',
  'earned_at',
  'available_at',
  'expires_at',
];
function parseBalance(fields: Map<string, string>, now: Date): BalanceRow | Problem[] {
  const problems: Problem[] = [];
  const get = lineFields(fields, BALANCE_COLUMNS, problems);
  const externalId = externalIdOf(get, problems);
  const member = memberRef(get, problems);
  let points: number | null = null;
  let cents: number | null = null;
  if (get('points') !== '' && get('amount') !== '')
    problems.push({ column: 'amount', reason: 'give points or amount, not both' });
  else if (get('points') !== '') {
    if (!/^[0-9]{1,13}$/.test(get('points')) || Number(get('points')) < 1 || Number(get('points')) > 1e12)
      problems.push({ column: 'points', reason: 'must be a whole number from 1 to 1000000000000' });
    else points = Number(get('points'));
  } else if (get('amount') !== '') {
    if (
      !/^[0-9]{1,10}(\.[0-9]{1,2})?$/.test(get('amount')) ||
      Number(get('amount')) <= 0 ||
      Number(get('amount')) > 1e9
    )
      problems.push({
        column: 'amount',
        reason: 'must be an amount above 0 with at most two decimals, at most 1000000000',
      });
    else cents = Math.round(Number(get('amount')) * 100);
  } else problems.push({ column: 'points', reason: 'points (points card) or amount (cashback card) is required' });
  const earnedAt = time(get, 'earned_at', problems, now);
  if (earnedAt && earnedAt > now) problems.push({ column: 'earned_at', reason: 'must not be in the future' });
  const availableAt = time(get, 'available_at', problems, earnedAt ?? now);
  const expiresAt = time(get, 'expires_at', problems, null);
  if (expiresAt && expiresAt <= now)
    problems.push({ column: 'expires_at', reason: 'is in the past: this balance has expired' });
  else if (expiresAt && availableAt && expiresAt <= availableAt)
    problems.push({ column: 'expires_at', reason: 'must be after available_at' });
  if (problems.length > 0 || !earnedAt || !availableAt || expiresAt === undefined) return problems;
  return {
    external_id: externalId,
    ...member,
    points,
    cents,
    earned_at: earnedAt,
    available_at: availableAt,
    expires_at: expiresAt,
  };
}

type Staged = { line: number; row: BalanceRow };
/** Lines merged per execute step (one statement; each step one transaction with its checkpoint). */
const MERGE_BATCH = 20_000;
type Context = Parameters<ImportKindSpec<BalanceRow>['stage']>[2];
type Db = Parameters<ImportKindSpec<BalanceRow>['stage']>[0];

export function balanceImportSpec(rt: ServiceRuntime, client: ServiceClient): ImportKindSpec<BalanceRow> {
  return {
    staging: 'import_balances',
    writes: ['ledger.import_keys', 'ledger.accounts', 'ledger.journal', 'ledger.lots'],
    parse: (fields) => parseBalance(fields, rt.clock.now()),
    check: (db, ctx) => checkCard(db, ctx),
    resolve: (rows, ctx) => resolveMembers(rt.pool, client, rows, ctx),
    stage: stageBalances,
    mergeBatch: MERGE_BATCH,
    merge: (db, after, upTo, ctx) => mergeBalances(db, after, upTo, ctx, rt.clock.now()),
  };
}

/** A balances (tiers, history) import names a card of the tenant. */
export async function checkCard(db: Queryable, ctx: Context, kind = 'balances'): Promise<void> {
  if (ctx.cardId === null)
    throw new AppError('validation_error', 'Invalid request: card_id.', {
      fields: [{ field: 'card_id', message: `is required for a ${kind} import` }],
    });
  const { rowCount } = await db.query('SELECT 1 FROM ledger.cards WHERE tenant_id = $1 AND id = $2', [
    ctx.tenantId,
    ctx.cardId,
  ]);
  if (rowCount !== 1) throw new AppError('card_not_found');
}

/** Outside any transaction: the members the lines name (asked of identity), and the card's unit. */
async function resolveMembers(pool: Pool, client: ServiceClient, rows: Staged[], ctx: Context): Promise<RowProblem[]> {
  const problems = await unitProblems(pool, rows, ctx);
  problems.push(...(await resolveMemberRefs(client, rows, ctx)));
  return problems;
}

/** Points on a points card, amounts on a cashback card. */
export async function unitProblems(
  pool: Pool,
  rows: { line: number; row: { points: number | null; cents: number | null } }[],
  ctx: Context,
): Promise<RowProblem[]> {
  const { rows: cards } = await pool.query<{ reward_system: string }>(
    'SELECT reward_system FROM ledger.cards WHERE tenant_id = $1 AND id = $2',
    [ctx.tenantId, ctx.cardId],
  );
  const cents = cards[0]?.reward_system === 'cashback';
  const problems: RowProblem[] = [];
  for (const { line, row } of rows) {
    if (cents && row.points !== null)
      problems.push({ line, column: 'points', reason: 'this is a cashback card: give amount' });
    else if (!cents && row.cents !== null)
      problems.push({ line, column: 'amount', reason: 'this is a points card: give points' });
  }
  return problems;
}

/** Stage the good lines; a line repeating an external id of an earlier one is refused. */
async function stageBalances(db: Db, rows: Staged[], ctx: Context): Promise<RowProblem[]> {
  if (rows.length === 0) return [];
  const { rows: staged } = await db.query<{ line: string }>(
    `INSERT INTO ledger.import_balances (import_id, line, external_id, member_id, amount, earned_at, available_at, expires_at)
     SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::timestamptz[], $7::timestamptz[], $8::timestamptz[])
     ON CONFLICT DO NOTHING RETURNING line::text`,
    [
      ctx.importId,
      rows.map((r) => r.line),
      rows.map((r) => r.row.external_id),
      rows.map((r) => r.row.member_id),
      rows.map((r) => r.row.points ?? r.row.cents),
      rows.map((r) => r.row.earned_at),
      rows.map((r) => r.row.available_at),
      rows.map((r) => r.row.expires_at),
    ],
  );
  const done = new Set(staged.map((s) => Number(s.line)));
  const problems: RowProblem[] = [];
  for (const { line, row } of rows.filter((r) => !done.has(r.line))) {
    const { rows: first } = await db.query<{ line: string }>(
      'SELECT line::text FROM ledger.import_balances WHERE import_id = $1 AND external_id = $2',
      [ctx.importId, row.external_id],
    );
    problems.push({ line, column: 'external_id', reason: `repeats line ${first[0]?.line ?? '?'} of this file` });
  }
  return problems;
}

// One statement per step, nothing read into the service: the step's lines never applied on the card
// claim their import keys (each written once, with the journal id it is given from the journal's
// sequence), the accounts are opened with their balances or updated (in member order, as postings
// lock them), and the journal rows (staff adjustments naming the import, each with the balance after
// it) and their lots are written. A line whose key exists changes nothing.
const MERGE_LINES = `WITH batch AS (
       SELECT line, external_id, member_id, amount, earned_at, available_at, expires_at, available_at > $6 AS pending
         FROM ledger.import_balances WHERE import_id = $1 AND line > $2 AND line <= $3),
     keyed AS (
       INSERT INTO ledger.import_keys (tenant_id, card_id, kind, external_id, journal_id)
       SELECT $4, $5, 'balances', external_id, nextval('ledger.journal_id_seq')
         FROM (SELECT external_id FROM batch ORDER BY line OFFSET 0) b
       ON CONFLICT DO NOTHING RETURNING external_id, journal_id),
     input AS (SELECT b.*, k.journal_id FROM keyed k JOIN batch b USING (external_id)),
     sums AS (
       SELECT member_id, count(*) AS n,
              coalesce(sum(amount) FILTER (WHERE NOT pending), 0) AS spendable,
              coalesce(sum(amount) FILTER (WHERE pending), 0) AS waiting,
              min(CASE WHEN pending THEN available_at ELSE expires_at END) AS next_change
         FROM input GROUP BY member_id),
     account AS (
       INSERT INTO ledger.accounts AS a (card_id, member_id, tenant_id, balance, pending, entries, next_change_at, created_at, updated_at)
       SELECT $5, member_id, $4, spendable, waiting, n, next_change, $6, $6 FROM sums ORDER BY member_id
       ON CONFLICT (card_id, member_id) DO UPDATE
          SET balance = a.balance + excluded.balance, pending = a.pending + excluded.pending,
              entries = a.entries + excluded.entries, updated_at = excluded.updated_at,
              next_change_at = LEAST(a.next_change_at, excluded.next_change_at)
       RETURNING a.member_id, a.balance, a.pending, a.held),
     before AS (SELECT a.member_id, a.balance - s.spendable AS balance FROM account a JOIN sums s USING (member_id)),
     entry AS (
       INSERT INTO ledger.journal (id, tenant_id, card_id, member_id, event, amount, balance_after, metadata, created_at)
       SELECT i.journal_id, $4, $5, i.member_id, 'staff_adjustment', i.amount,
              b.balance + sum(CASE WHEN i.pending THEN 0 ELSE i.amount END) OVER (PARTITION BY i.member_id ORDER BY i.line),
              jsonb_build_object('reason', 'imported balance', 'import', jsonb_build_object(
                'id', $7::text, 'external_id', i.external_id,
                'earned_at', to_char(i.earned_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))),
              $6
         FROM input i JOIN before b USING (member_id) ORDER BY i.journal_id),
     lot AS (
       INSERT INTO ledger.lots (tenant_id, card_id, member_id, journal_id, amount, remaining, pending, available_at, expires_at, warn_at, created_at)
       SELECT $4, $5, member_id, journal_id, amount, amount, pending, available_at, expires_at,
              expires_at - interval '86400 seconds' * (SELECT expiry_warning_days FROM ledger.cards WHERE id = $5), $6
         FROM input ORDER BY journal_id)
     SELECT count(*)::int AS applied FROM input`;

/** The new lines of a step, applied in one statement: import keys, accounts, journal rows and lots; how many were new. */
async function mergeBalances(db: Db, after: number, upTo: number, ctx: Context, now: Date): Promise<number> {
  // The step's CTEs are joined on tens of thousands of rows the planner cannot count (a CTE's
  // estimate, the staged table's statistics from before the upload): a nested loop over them is
  // quadratic, so this transaction joins them by hashing (or merging).
  await db.query('SET LOCAL enable_nestloop = off');
  try {
    const { rows } = await db.query<{ applied: number }>(MERGE_LINES, [
      ctx.importId,
      after,
      upTo,
      ctx.tenantId,
      ctx.cardId,
      now,
      ctx.publicId,
    ]);
    return rows[0]?.applied ?? 0;
  } catch (err) {
    // The accounts' limit (a CHECK: balance + pending + held at most the largest balance) refused a line.
    if (err instanceof Error && 'constraint' in err && err.constraint === 'accounts_balance_limit')
      throw new AppError('balance_limit_exceeded');
    throw err;
  }
}
