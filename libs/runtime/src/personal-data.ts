import type { Queryable } from './db.ts';

/**
 * Erasing a member's personal data from free text: every service keeps rows keyed by the member's
 * id (rewritten by id) and text that may carry their name, email or phone anywhere (an event
 * payload, a stored idempotent response, a note). The latter is found by pattern: the member's
 * name as a whole word (case-insensitive), their email and phone as written, each also in its JSON
 * string form (quotes and backslashes escaped), and replaced by `[erased]`, which keeps a JSON
 * document valid. A second pass finds nothing more: the rewriting is idempotent.
 */
export const ERASED = '[erased]';

export interface PersonalStrings {
  name: string | null;
  email: string | null;
  phone: string | null;
}

/** Shorter names are not looked for in free text (a two-letter name would match other members' words). */
const MIN_NAME_LENGTH = 3;

const regexEscape = (s: string) => s.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
const jsonEscape = (s: string) => JSON.stringify(s).slice(1, -1);

/**
 * One PostgreSQL regular expression (ARE) matching the member's personal strings, or undefined
 * when there is nothing to look for. The name matches as whole words only (`\m`, `\M`).
 */
export function personalPattern(p: PersonalStrings): string | undefined {
  const parts: string[] = [];
  const forms = (s: string) => [...new Set([s, jsonEscape(s)])].map(regexEscape);
  const name = p.name?.trim();
  if (name && name.length >= MIN_NAME_LENGTH) for (const f of forms(name)) parts.push(`\\m${f}\\M`);
  for (const s of [p.email, p.phone]) if (s) parts.push(...forms(s));
  return parts.length === 0 ? undefined : `(${parts.join('|')})`;
}

/**
 * Rewrite `column` (text, or jsonb with `json`) of `table` wherever it matches `pattern`, in the
 * rows `where` selects (all by default; `$2`, `$3`, ... are `args`): how many rows changed.
 */
export async function rewritePersonalText(
  db: Queryable,
  target: { table: string; column: string; json?: boolean; where?: string; args?: unknown[] },
  pattern: string | undefined,
): Promise<number> {
  if (!pattern) return 0;
  const col = target.json ? `${target.column}::text` : target.column;
  const value = `regexp_replace(${col}, $1, '${ERASED}', 'gi')`;
  const { rowCount } = await db.query(
    `UPDATE ${target.table} SET ${target.column} = ${target.json ? `${value}::jsonb` : value}
      WHERE ${col} ~* $1${target.where ? ` AND (${target.where})` : ''}`,
    [pattern, ...(target.args ?? [])],
  );
  return rowCount ?? 0;
}

/**
 * The tables every service has that may carry a member's data in free text: its outbox's event
 * payloads and its stored idempotent responses. Rows changed per table.
 */
export async function erasePersonalTextInSharedTables(
  db: Queryable,
  schema: string,
  pattern: string | undefined,
): Promise<Record<string, number>> {
  return {
    outbox: await rewritePersonalText(db, { table: `${schema}.outbox`, column: 'payload', json: true }, pattern),
    idempotency_keys: await rewritePersonalText(
      db,
      { table: `${schema}.idempotency_keys`, column: 'response' },
      pattern,
    ),
  };
}
