/** What a thrown value says of itself: Node's errors carry a string `code`, and often a `cause`. */
export interface ErrorParts {
  code: string | undefined;
  message: string | undefined;
  cause: unknown;
}

export function errorParts(err: unknown): ErrorParts {
  if (typeof err !== 'object' || err === null) return { code: undefined, message: undefined, cause: undefined };
  return {
    code: 'code' in err && typeof err.code === 'string' ? err.code : undefined,
    message: 'message' in err && typeof err.message === 'string' ? err.message : undefined,
    cause: 'cause' in err ? err.cause : undefined,
  };
}
