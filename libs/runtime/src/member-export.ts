import type { Queryable } from './db.ts';

/**
 * A member's data export, page by page: each service lists its sections (a table's rows about the
 * member), and identity's export job asks it for one page after another, committing each with its
 * checkpoint, so a page fits one NATS reply and a resumed job asks again from the last page kept.
 */
export interface ExportSection {
  /** The name the rows go under in the export (`journal`, `claim_requests`). */
  name: string;
  /**
   * The rows of a page: `$1` the tenant, `$2` the member, `$3` the key to start after, `$4` the
   * page size. It answers `key` (a bigint, the order of the pages) and `row` (the row as jsonb,
   * without secrets such as hashes).
   */
  query: string;
}

export interface ExportPage {
  section: string;
  rows: Record<string, unknown>[];
  /** Where the next page starts; null after the last page of the last section. */
  next_cursor: string | null;
}

/** Rows per page: a page stays well under the NATS message limit (1 MB). */
export const EXPORT_PAGE_ROWS = 200;

const CURSOR = /^(\d{1,3}):(-?\d{1,19})$/;

/** One page of `sections` for the member, from `cursor` (`<section index>:<last key>`, null: the start). */
export async function exportPage(
  db: Queryable,
  sections: readonly ExportSection[],
  input: { tenantId: number; memberId: number; cursor: string | null },
  limit = EXPORT_PAGE_ROWS,
): Promise<ExportPage> {
  const at = input.cursor === null ? undefined : CURSOR.exec(input.cursor);
  const index = at ? Number(at[1]) : 0;
  const after = at ? (at[2] ?? '0') : String(Number.MIN_SAFE_INTEGER);
  const section = sections[index];
  if (!section) return { section: '', rows: [], next_cursor: null };
  const { rows } = await db.query<{ key: string; row: Record<string, unknown> }>(section.query, [
    input.tenantId,
    input.memberId,
    after,
    limit,
  ]);
  const last = rows.at(-1);
  const next =
    rows.length === limit && last
      ? `${index}:${last.key}`
      : index + 1 < sections.length
        ? `${index + 1}:${Number.MIN_SAFE_INTEGER}`
        : null;
  return { section: section.name, rows: rows.map((r) => r.row), next_cursor: next };
}
