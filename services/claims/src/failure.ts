/** The code (an AppError's, a socket's) and message of a failure, for a log line. */
export function failureFields(err: unknown): { code: unknown; err: string } {
  const code = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
  return { code, err: err instanceof Error ? err.message : String(err) };
}
