import { staffOperations } from '@loyalty/contracts/staff';
import * as z from 'zod';

/**
 * The staff API as the console calls it, typed and checked by the staff contracts
 * (`@loyalty/contracts/staff`): an operation is named by its contract key, its path, method and
 * Idempotency-Key come from the contract, and its answer is parsed with the contract's response
 * schema, so a page never renders an answer the contract does not describe. Same origin,
 * `Authorization: Bearer <staff token>`; a failure is thrown as an ApiError with the catalogue code.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

type Ops = typeof staffOperations;
export type OperationName = keyof Ops;

/** What an operation answers: the success envelope's `data`, as the contract's schema parses it. */
export type Answer<K extends OperationName> = z.output<Ops[K]['response']>;

type Part<O, F extends 'params' | 'query' | 'body'> = O extends { [P in F]: infer S extends z.ZodType }
  ? { [P in F]: z.input<S> }
  : { [P in F]?: never };
/** What an operation takes: its path parameters, query and body as the contract accepts them. */
export type Input<K extends OperationName> = Part<Ops[K], 'params'> & Part<Ops[K], 'query'> & Part<Ops[K], 'body'>;
/** The input may be left out when nothing in it is required (`{}` is a valid input). */
type InputArgs<K extends OperationName> = object extends Input<K> ? [input?: Input<K>] : [input: Input<K>];

/** The answer envelope every API shares; `data` is then checked against the operation's schema. */
const Envelope = z.discriminatedUnion('success', [
  z.object({ success: z.literal(true), data: z.unknown() }),
  z.object({ success: z.literal(false), error: z.looseObject({ code: z.string(), message: z.string() }) }),
]);

/** Where the staff token is kept: the tab's session storage in the browser. */
export type TokenStore = Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>;

export interface ClientOptions {
  fetch: (url: string, init: RequestInit) => Promise<Response>;
  storage: () => TokenStore;
}

const TOKEN_KEY = 'loyalty.staff.token';

/** A query string of the defined, non-empty values. */
function queryString(params: object | undefined): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params ?? {})) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** The contract's path with its `:name` parameters filled in. */
function fillPath(template: string, params: object | undefined): string {
  const values = new Map(Object.entries(params ?? {}));
  return template.replace(/:([a-z_]+)/g, (_, name: string) => encodeURIComponent(String(values.get(name))));
}

/** The first few problems of a parse, each with where it is in the answer. */
function describeIssues(error: z.ZodError): string {
  const shown = error.issues
    .slice(0, 3)
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : 'the answer'}: ${i.message}`);
  const more = error.issues.length - shown.length;
  return shown.join('; ') + (more > 0 ? ` (and ${more} more)` : '');
}

export function createStaffClient(options: ClientOptions) {
  /** Called when the server says the token no longer works (expired, signed out elsewhere, deactivated). */
  let onSignedOut: () => void = () => undefined;

  /** The staff token lives in this tab's session storage: closing the tab signs out. */
  const session = {
    get token(): string | null {
      return options.storage().getItem(TOKEN_KEY);
    },
    set(token: string): void {
      options.storage().setItem(TOKEN_KEY, token);
    },
    clear(): void {
      options.storage().removeItem(TOKEN_KEY);
    },
  };

  async function send(
    method: string,
    url: string,
    body: unknown,
    idempotent: boolean,
    file?: { data: Blob; type: string },
  ): Promise<Response> {
    const headers: Record<string, string> = {};
    const token = session.token;
    if (token) headers.authorization = `Bearer ${token}`;
    if (file) headers['content-type'] = file.type;
    else if (body !== undefined) headers['content-type'] = 'application/json';
    // A fresh key for every action the staff user takes: a retried request never acts twice.
    if (idempotent) headers['idempotency-key'] = crypto.randomUUID();
    try {
      return await options.fetch(url, {
        method,
        headers,
        body: file ? file.data : body === undefined ? undefined : JSON.stringify(body),
      });
    } catch {
      throw new ApiError(0, 'network_error', 'The server cannot be reached; check the connection and try again.');
    }
  }

  /** The failure an answer carries (or a `bad_response` when there is no readable envelope). */
  async function failureOf(res: Response): Promise<ApiError> {
    const envelope = Envelope.safeParse(await res.json().catch(() => undefined));
    if (!envelope.success || envelope.data.success)
      return new ApiError(res.status, 'bad_response', `The server answered ${res.status} without a readable answer.`);
    const { code, message, ...details } = envelope.data.error;
    return new ApiError(res.status, code, message, details);
  }

  /**
   * Calls one staff operation and returns its answer, checked against the contract. An upload
   * operation (`upload` in the contract) sends `file` as the body, with its media type.
   */
  async function call<K extends OperationName>(name: K, ...[input]: InputArgs<K>): Promise<Answer<K>> {
    return callWith(name, input);
  }

  /** Sends a file to an upload operation (an import): the file is the body, `type` its media type. */
  async function upload<K extends OperationName>(
    name: K,
    input: Input<K>,
    file: { data: Blob; type: string },
  ): Promise<Answer<K>> {
    return callWith(name, input, file);
  }

  /** A download operation's bytes (an error file), or its failure. */
  async function download<K extends OperationName>(name: K, input: Input<K>): Promise<Blob> {
    const op: Ops[OperationName] = staffOperations[name];
    const parts: { params?: object; query?: object } = input;
    const res = await send('GET', fillPath(op.path, parts.params) + queryString(parts.query), undefined, false);
    if (res.ok) return res.blob();
    throw await failureOf(res);
  }

  async function callWith<K extends OperationName>(
    name: K,
    input: { params?: object; query?: object; body?: unknown } | undefined,
    file?: { data: Blob; type: string },
  ): Promise<Answer<K>> {
    const op: Ops[OperationName] = staffOperations[name];
    const parts = input ?? {};
    const url = fillPath(op.path, parts.params) + queryString(parts.query);
    const body = op.method === 'GET' ? undefined : (parts.body ?? {});
    const res = await send(op.method, url, body, op.idempotent, file);
    const envelope = Envelope.safeParse(await res.json().catch(() => undefined));
    if (!envelope.success)
      throw new ApiError(res.status, 'bad_response', `The server answered ${res.status} without a readable answer.`);
    if (!envelope.data.success) {
      const { code, message, ...details } = envelope.data.error;
      if (code === 'invalid_staff_token' || code === 'staff_token_required') {
        session.clear();
        onSignedOut();
      }
      throw new ApiError(res.status, code, message, details);
    }
    const answer = op.response.safeParse(envelope.data.data);
    if (!answer.success)
      throw new ApiError(
        res.status,
        'unexpected_answer',
        `The server's answer to ${op.method} ${op.path} does not match the staff API contract (${describeIssues(answer.error)}), so it is not shown.${op.idempotent ? ' The change may have been made: reload to see.' : ' Reload the page; if this stays, tell support.'}`,
      );
    // Parsed by operation K's own response schema; TypeScript cannot narrow the union of all
    // the operations' answers to K's from the generic key.
    return answer.data as Answer<K>;
  }

  return {
    call,
    upload,
    download,
    session,
    whenSignedOut(fn: () => void): void {
      onSignedOut = fn;
    },
  };
}
