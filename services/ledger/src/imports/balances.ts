import { AppError } from '@loyalty/contracts';
import {
  type ImportKindSpec,
  type Pool,
  type Queryable,
  type RowProblem,
  type ServiceClient,
  type ServiceRuntime,
} from '@loyalty/runtime';
import { MAX_BALANCE } from '../domain/money.ts';
import {
  externalId as externalIdOf,
  fieldsOf,
  lockAccounts,
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
  const get = fieldsOf(fields, BALANCE_COLUMNS, problems);
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
  const earnedAt = get('earned_at') === '' ? now : time(get('earned_at'));
  if (!earnedAt || earnedAt > now)
    problems.push({ column: 'earned_at', reason: 'must be an ISO 8601 date or time, not in the future' });
  const availableAt = get('available_at') === '' ? (earnedAt ?? now) : time(get('available_at'));
  if (!availableAt) problems.push({ column: 'available_at', reason: 'must be an ISO 8601 date or time' });
  const expiresAt = get('expires_at') === '' ? null : time(get('expires_at'));
  if (expiresAt === undefined) problems.push({ column: 'expires_at', reason: 'must be an ISO 8601 date or time' });
  else if (expiresAt && expiresAt <= now)
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
type Context = Parameters<ImportKindSpec<BalanceRow>['stage']>[2];
type Db = Parameters<ImportKindSpec<BalanceRow>['stage']>[0];

export function balanceImportSpec(rt: ServiceRuntime, client: ServiceClient): ImportKindSpec<BalanceRow> {
  return {
    staging: 'import_balances',
    parse: (fields) => parseBalance(fields, rt.clock.now()),
    check: (db, ctx) => checkCard(db, ctx),
    resolve: (rows, ctx) => resolveMembers(rt.pool, client, rows, ctx),
    stage: stageBalances,
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

interface NewLine {
  external_id: string;
  member_id: string;
  amount: string;
  earned_at: Date;
  available_at: Date;
  expires_at: Date | null;
}

// Journal rows (staff adjustments naming the import), their lots, the accounts' balances and the
// import keys' journal ids, in one statement over the step's new lines.
const APPLY_LINES = `WITH input AS (
       SELECT * FROM unnest($4::bigint[], $5::bigint[], $6::bigint[], $7::jsonb[], $8::boolean[], $9::timestamptz[],
                            $10::timestamptz[], $11::timestamptz[], $12::text[])
         WITH ORDINALITY AS i(member_id, amount, balance_after, metadata, pending, available_at, expires_at, warn_at, external_id, n)),
     entry AS (
       INSERT INTO ledger.journal (tenant_id, card_id, member_id, event, amount, balance_after, metadata, created_at)
       SELECT $1, $2, member_id, 'staff_adjustment', amount, balance_after, metadata, $3 FROM input ORDER BY n
       RETURNING id, metadata->'import'->>'external_id' AS external_id),
     lot AS (
       INSERT INTO ledger.lots (tenant_id, card_id, member_id, journal_id, amount, remaining, pending, available_at, expires_at, warn_at, created_at)
       SELECT $1, $2, i.member_id, e.id, i.amount, i.amount, i.pending, i.available_at, i.expires_at, i.warn_at, $3
         FROM entry e JOIN input i USING (external_id)),
     accounts AS (
       UPDATE ledger.accounts a
          SET balance = a.balance + s.spendable, pending = a.pending + s.waiting, entries = a.entries + s.n, updated_at = $3,
              next_change_at = LEAST(a.next_change_at, s.next_change)
         FROM (SELECT member_id, count(*) AS n,
                      coalesce(sum(amount) FILTER (WHERE NOT pending), 0) AS spendable,
                      coalesce(sum(amount) FILTER (WHERE pending), 0) AS waiting,
                      min(CASE WHEN pending THEN available_at ELSE expires_at END) AS next_change
                 FROM input GROUP BY member_id) s
        WHERE a.card_id = $2 AND a.member_id = s.member_id)
     UPDATE ledger.import_keys k SET journal_id = e.id FROM entry e
      WHERE k.tenant_id = $1 AND k.card_id = $2 AND k.kind = 'balances' AND k.external_id = e.external_id`;

/** The lines of a step never applied on the card (claimed in import_keys), their accounts opened and locked. */
async function newLines(
  db: Parameters<ImportKindSpec<never>['merge']>[0],
  after: number,
  upTo: number,
  ctx: { importId: string; publicId: string; tenantId: number; cardId: number | null },
  now: Date,
): Promise<{ rows: NewLine[]; balances: Map<number, bigint>; warnMs: number }> {
  const { rows } = await db.query<{
    external_id: string;
    member_id: string;
    amount: string;
    earned_at: Date;
    available_at: Date;
    expires_at: Date | null;
  }>(
    `WITH batch AS (SELECT * FROM ledger.import_balances WHERE import_id = $1 AND line > $2 AND line <= $3),
     fresh AS (
       INSERT INTO ledger.import_keys (tenant_id, card_id, kind, external_id)
       SELECT $4, $5, 'balances', external_id FROM batch ORDER BY line ON CONFLICT DO NOTHING RETURNING external_id)
     SELECT b.external_id, b.member_id::text, b.amount::text, b.earned_at, b.available_at, b.expires_at
       FROM batch b JOIN fresh f USING (external_id) ORDER BY b.line`,
    [ctx.importId, after, upTo, ctx.tenantId, ctx.cardId],
  );
  if (rows.length === 0) return { rows, balances: new Map(), warnMs: 0 };
  const { rows: card } = await db.query<{ expiry_warning_days: number }>(
    'SELECT expiry_warning_days FROM ledger.cards WHERE id = $1',
    [ctx.cardId],
  );
  const warnMs = (card[0]?.expiry_warning_days ?? 0) * 86_400_000;
  const balances = await lockAccounts(
    db,
    ctx,
    rows.map((r) => Number(r.member_id)),
    now,
  );
  return { rows, balances, warnMs };
}

/** The new lines of a step, applied: accounts, journal rows and lots; how many were new. */
async function mergeBalances(db: Db, after: number, upTo: number, ctx: Context, now: Date): Promise<number> {
  const { rows, balances: balance, warnMs } = await newLines(db, after, upTo, ctx, now);
  if (rows.length === 0) return 0;
  const lines = rows.map((r) => {
    const member = Number(r.member_id);
    const amount = BigInt(r.amount);
    const pending = r.available_at > now;
    if (!pending) balance.set(member, (balance.get(member) ?? 0n) + amount);
    return {
      member,
      amount: r.amount,
      after: String(balance.get(member) ?? 0n),
      pending,
      available_at: r.available_at,
      expires_at: r.expires_at,
      warn_at: r.expires_at ? new Date(r.expires_at.getTime() - warnMs) : null,
      metadata: JSON.stringify({
        reason: 'imported balance',
        import: { id: ctx.publicId, external_id: r.external_id, earned_at: r.earned_at.toISOString() },
      }),
      external_id: r.external_id,
    };
  });
  if ([...balance.values()].some((b) => b > BigInt(MAX_BALANCE))) throw new AppError('balance_limit_exceeded');
  await db.query(APPLY_LINES, [
    ctx.tenantId,
    ctx.cardId,
    now,
    lines.map((l) => l.member),
    lines.map((l) => l.amount),
    lines.map((l) => l.after),
    lines.map((l) => l.metadata),
    lines.map((l) => l.pending),
    lines.map((l) => l.available_at),
    lines.map((l) => l.expires_at),
    lines.map((l) => l.warn_at),
    lines.map((l) => l.external_id),
  ]);
  return rows.length;
}
