/**
 * The row a statement always yields (an aggregate, an INSERT ... RETURNING, a row read back in the
 * transaction that wrote it). None is a fault of this service, not of the request.
 */
export function required<T>(row: T | undefined, what: string): T {
  if (row === undefined) throw new Error(`Expected ${what}; the database returned none.`);
  return row;
}
