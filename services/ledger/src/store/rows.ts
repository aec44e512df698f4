/**
 * The one row a statement answers by construction (an INSERT or UPDATE ... RETURNING of a row that
 * exists, an aggregate): its absence is a bug, reported with what was asked.
 */
export function theRow<T>(rows: T[], what: string): T {
  const row = rows[0];
  if (row === undefined) throw new Error(`${what} answered no row`);
  return row;
}
