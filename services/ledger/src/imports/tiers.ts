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
import { checkCard } from './balances.ts';
import { lockAccounts, memberRef, resolveMemberRefs, time, type MemberRef, type Problem } from './member-refs.ts';

/**
 * The `tiers` import kind (a card with tiers): one line per member, `member_external_id` or
 * `member_email`, `tier` (a tier name of the card's ladder) and `valid_until` (in the future).
 * Each line sets the member's tier as a tier set by hand with the reason `imported`: held until
 * `valid_until`, then reviewed like any other. Idempotent by card and member (`import_keys`, kind
 * `tiers`, the member id as the key): a member whose tier was imported on the card before is left
 * as they are (their tier may have moved since), so running the same file again changes nothing.
 * Like every import, no event, audit record or mail.
 */
interface TierRow extends MemberRef {
  tier: string;
  rank: number | null;
  valid_until: Date;
}

export const TIER_COLUMNS = ['member_external_id', 'member_email', 'tier', 'valid_until'];
type Context = Parameters<ImportKindSpec<TierRow>['stage']>[2];
type Db = Parameters<ImportKindSpec<TierRow>['stage']>[0];
type Staged = { line: number; row: TierRow };

function parseTier(fields: Map<string, string>, now: Date): TierRow | Problem[] {
  const problems: Problem[] = [];
  const get = lineFields(fields, TIER_COLUMNS, problems);
  const member = memberRef(get, problems);
  const tier = get('tier');
  if (tier === '' || tier.length > 100)
    problems.push({ column: 'tier', reason: 'is required: a tier name of the card' });
  const until = time(get, 'valid_until', problems);
  if (until && until <= now) problems.push({ column: 'valid_until', reason: 'must be in the future' });
  if (problems.length > 0 || !until) return problems;
  return { ...member, tier, rank: null, valid_until: until };
}

/** A tiers import names a card of the tenant that has tiers. */
async function checkLadder(db: Queryable, ctx: Context): Promise<void> {
  await checkCard(db, ctx, 'tiers');
  const { rowCount } = await db.query('SELECT 1 FROM ledger.tiers WHERE card_id = $1 LIMIT 1', [ctx.cardId]);
  if (rowCount !== 1) throw new AppError('tiers_not_configured');
}

/** Outside any transaction: the members (asked of identity) and the tiers the lines name. */
async function resolveTiers(pool: Pool, client: ServiceClient, rows: Staged[], ctx: Context): Promise<RowProblem[]> {
  const { rows: steps } = await pool.query<{ name: string; rank: number }>(
    'SELECT name, rank FROM ledger.tiers WHERE card_id = $1 ORDER BY rank',
    [ctx.cardId],
  );
  const ranks = new Map(steps.map((s) => [s.name.toLowerCase(), s.rank]));
  const problems: RowProblem[] = [];
  for (const { line, row } of rows) {
    const rank = ranks.get(row.tier.toLowerCase());
    if (rank === undefined)
      problems.push({
        line,
        column: 'tier',
        reason: `the card has no tier named ${JSON.stringify(row.tier)} (tiers: ${steps.map((s) => s.name).join(', ')})`,
      });
    else row.rank = rank;
  }
  problems.push(...(await resolveMemberRefs(client, rows, ctx)));
  return problems;
}

/** Stage the good lines; a second line for the same member is refused. */
async function stageTiers(db: Db, rows: Staged[], ctx: Context): Promise<RowProblem[]> {
  if (rows.length === 0) return [];
  const { rows: staged } = await db.query<{ line: string }>(
    `INSERT INTO ledger.import_tiers (import_id, line, member_id, rank, valid_until)
     SELECT $1, * FROM unnest($2::bigint[], $3::bigint[], $4::int[], $5::timestamptz[])
     ON CONFLICT DO NOTHING RETURNING line::text`,
    [
      ctx.importId,
      rows.map((r) => r.line),
      rows.map((r) => r.row.member_id),
      rows.map((r) => r.row.rank),
      rows.map((r) => r.row.valid_until),
    ],
  );
  const done = new Set(staged.map((s) => Number(s.line)));
  const problems: RowProblem[] = [];
  for (const { line, row } of rows.filter((r) => !done.has(r.line))) {
    const { rows: first } = await db.query<{ line: string }>(
      'SELECT line::text FROM ledger.import_tiers WHERE import_id = $1 AND member_id = $2',
      [ctx.importId, row.member_id],
    );
    problems.push({
      line,
      column: row.member_external_id ? 'member_external_id' : 'member_email',
      reason: `names the same member as line ${first[0]?.line ?? '?'} of this file`,
    });
  }
  return problems;
}

/**
 * The step's members not imported on the card before (claimed in import_keys), their accounts
 * opened and locked (an earn's tier move holds the same lock), then their tiers set in one
 * statement: joined on the account's local opening day, counted from its window's start.
 */
async function mergeTiers(db: Db, after: number, upTo: number, ctx: Context, now: Date): Promise<number> {
  const { rows } = await db.query<{ member_id: string }>(
    `WITH batch AS (SELECT * FROM ledger.import_tiers WHERE import_id = $1 AND line > $2 AND line <= $3)
     INSERT INTO ledger.import_keys (tenant_id, card_id, kind, external_id)
     SELECT $4, $5, 'tiers', member_id::text FROM batch ORDER BY line ON CONFLICT DO NOTHING RETURNING external_id AS member_id`,
    [ctx.importId, after, upTo, ctx.tenantId, ctx.cardId],
  );
  if (rows.length === 0) return 0;
  const members = rows.map((r) => Number(r.member_id));
  await lockAccounts(db, ctx, members, now);
  await db.query(
    `WITH input AS (
       SELECT t.member_id, t.rank, t.valid_until,
              (a.created_at AT TIME ZONE c.time_zone)::date AS joined,
              ($4::timestamptz AT TIME ZONE c.time_zone)::date AS today,
              l.window_kind, l.window_days, l.warning_days
         FROM ledger.import_tiers t
         JOIN ledger.cards c ON c.id = $2
         JOIN ledger.tier_ladders l ON l.card_id = $2
         JOIN ledger.accounts a ON a.card_id = $2 AND a.member_id = t.member_id
        WHERE t.import_id = $5 AND t.member_id = ANY($3::bigint[]))
     INSERT INTO ledger.member_tiers AS m (card_id, member_id, tenant_id, rank, prev_rank, valid_until, warn_at, joined_on,
                                           qualifying, counted_from, manual_reason, updated_at)
     SELECT $2, member_id, $1, rank, rank, valid_until,
            NULLIF(GREATEST(valid_until - make_interval(days => warning_days), $4::timestamptz), $4::timestamptz),
            joined, 0, ledger.tier_window_start(window_kind, window_days, today, joined), 'imported', $4
       FROM input ORDER BY member_id
     ON CONFLICT (card_id, member_id) DO UPDATE SET prev_rank = m.rank, rank = EXCLUDED.rank,
       valid_until = EXCLUDED.valid_until, warn_at = EXCLUDED.warn_at, manual_reason = EXCLUDED.manual_reason,
       updated_at = EXCLUDED.updated_at`,
    [ctx.tenantId, ctx.cardId, members, now, ctx.importId],
  );
  return rows.length;
}

export function tierImportSpec(rt: ServiceRuntime, client: ServiceClient): ImportKindSpec<TierRow> {
  return {
    staging: 'import_tiers',
    writes: ['ledger.import_keys', 'ledger.member_tiers'],
    parse: (fields) => parseTier(fields, rt.clock.now()),
    check: checkLadder,
    resolve: (rows, ctx) => resolveTiers(rt.pool, client, rows, ctx),
    stage: stageTiers,
    merge: (db, after, upTo, ctx) => mergeTiers(db, after, upTo, ctx, rt.clock.now()),
  };
}
