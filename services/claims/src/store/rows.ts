/**
 * The row of a statement that always returns one: an INSERT ... RETURNING, or an UPDATE of a row
 * the caller has just found or holds locked. None would be a broken invariant, not an answer.
 */
export function returnedRow<T>(rows: T[], statement: string): T {
  const row = rows[0];
  if (row === undefined) throw new Error(`${statement} returned no row`);
  return row;
}
