import { z } from 'zod';
import type { Operation, OperationInput } from './ops/types.ts';

type InputSchemas = Pick<Operation, 'params' | 'query' | 'body'>;

/** One refused input field, as it appears in `validation_error`'s `fields`. */
export interface InputIssue {
  field: string;
  message: string;
}

/** The parts of an HTTP request an operation's input is built from. */
export interface InputParts {
  /** The path parameters (their names are the route's `:name` segments). */
  params?: unknown;
  query?: unknown;
  body?: unknown;
}

export type OperationInputResult = { ok: true; data: Record<string, unknown> } | { ok: false; fields: InputIssue[] };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * How deep a request body may nest. No operation needs more than a few levels (metadata allows 5);
 * a body thousands of levels deep would overflow the stack of recursive code (validation, logging,
 * serialisation), so it is refused before anything walks it recursively.
 */
export const MAX_INPUT_DEPTH = 32;

/**
 * Whether a parsed JSON value nests deeper than `max` levels. It recurses at most `max + 1` calls
 * deep whatever the value's depth (it stops at the first level beyond `max`), so it is safe on any
 * depth, and it keeps no list of values to visit: it runs on every request body (twice in the
 * gateway, once more in the service).
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (max < 1) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (nestsDeeperThan(item, max - 1)) return true;
  } else if (isRecord(value)) {
    for (const key in value) if (Object.hasOwn(value, key) && nestsDeeperThan(value[key], max - 1)) return true;
  }
  return false;
}

/** The `validation_error` field of a body nesting beyond {@link MAX_INPUT_DEPTH}. */
export const tooDeepIssue: InputIssue = {
  field: '(body)',
  message: `must be nested at most ${MAX_INPUT_DEPTH} levels deep`,
};

/**
 * The one place an operation's input is built: path parameters, query and body are validated by
 * their own schemas from the same merged object `{...params, ...query, ...body}` and their outputs
 * merged. A path parameter cannot be given again in the query or the body (it would otherwise
 * override the path: `POST /claims/7/reject` with `{"request_id": 8}` rejecting claim 8); the
 * body must be a JSON object. Every issue of every part is reported together.
 *
 * The gateway calls this with the request's parts and sends the merged `data` to the owning
 * service, which validates it again with {@link operationInput} (it receives the merged object).
 */
export function buildOperationInput(op: InputSchemas, parts: InputParts): OperationInputResult {
  const { params, query, body } = parts;
  if (nestsDeeperThan(body, MAX_INPUT_DEPTH) || nestsDeeperThan(query, MAX_INPUT_DEPTH))
    return { ok: false, fields: [tooDeepIssue] };
  const source: Record<string, unknown> = {
    ...(isRecord(params) ? params : undefined),
    ...(isRecord(query) ? query : undefined),
    ...(isRecord(body) ? body : undefined),
  };
  const issues: z.core.$ZodIssue[] = [];
  const data = parseParts(op, source, issues);
  const fields: InputIssue[] = issues.flatMap(issueFields).map(({ path, message }) => ({
    field: path.map(String).join('.') || '(body)',
    message,
  }));
  if (body !== undefined && !isRecord(body)) fields.push({ field: '(body)', message: 'must be a JSON object' });
  if (isRecord(params)) {
    for (const name of Object.keys(params)) {
      if (isRecord(query) && Object.hasOwn(query, name))
        fields.push({ field: name, message: 'is a path parameter; it cannot be given in the query' });
      if (isRecord(body) && Object.hasOwn(body, name))
        fields.push({ field: name, message: 'is a path parameter; it cannot be given in the body' });
    }
  }
  return fields.length === 0 ? { ok: true, data } : { ok: false, fields };
}

/**
 * The same input as a zod schema over the already merged object (what a service receives as
 * `data`): the parts' schemas validate it and their outputs are merged, issues reported together.
 */
export function operationInput<O extends InputSchemas>(op: O): z.ZodType<OperationInput<O>> {
  return z.unknown().transform((input, ctx) => {
    if (nestsDeeperThan(input, MAX_INPUT_DEPTH)) {
      ctx.addIssue({ code: 'custom', message: tooDeepIssue.message });
      return z.NEVER;
    }
    const issues: z.core.$ZodIssue[] = [];
    const data = parseParts(op, input && typeof input === 'object' ? input : {}, issues);
    for (const { message, path } of issues.flatMap(issueFields)) ctx.addIssue({ code: 'custom', message, path });
    // The parts' outputs together are the operation's input (each validated by its own schema).
    // eslint-disable-next-line @typescript-eslint/consistent-type-assertions -- the merge of the parts' validated outputs
    return data as OperationInput<O>;
  });
}

/** A field a strict object does not have is not there to be given: one issue per unknown key, naming it. */
export const UNKNOWN_FIELD = 'is not a field of this request (misspelt?)';

/** The refused fields of one zod issue: an unknown key of a strict object is named itself, one issue per key. */
function issueFields(issue: z.core.$ZodIssue): { path: PropertyKey[]; message: string }[] {
  if (issue.code === 'unrecognized_keys')
    return issue.keys.map((key) => ({ path: [...issue.path, key], message: UNKNOWN_FIELD }));
  return [{ path: issue.path, message: issue.message }];
}

/**
 * Validates `source` with each of the operation's part schemas, merging their outputs; issues go to
 * `issues`. The body's schema sees the source without the path parameters' and the query's names,
 * so a strict body (one that refuses fields it does not have) refuses only what the body added.
 */
function parseParts(op: InputSchemas, source: object, issues: z.core.$ZodIssue[]): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  const elsewhere = namesOutsideBody(op);
  // Most operations have no path or query parameters (an earn): their body sees the source as it is.
  const bodySource =
    op.body === undefined || elsewhere.size === 0
      ? source
      : Object.fromEntries(Object.entries(source).filter(([k]) => !elsewhere.has(k)));
  for (const part of [op.params, op.query, op.body]) {
    if (part === undefined) continue;
    const r = part.safeParse(part === op.body ? bodySource : source);
    if (r.success) Object.assign(data, r.data);
    else issues.push(...r.error.issues);
  }
  return data;
}

const outsideBody = new WeakMap<InputSchemas, ReadonlySet<string>>();

/** The names of an operation's path and query parameters (worked out once per operation). */
function namesOutsideBody(op: InputSchemas): ReadonlySet<string> {
  let names = outsideBody.get(op);
  if (names === undefined) {
    names = new Set([...Object.keys(op.params?.shape ?? {}), ...Object.keys(op.query?.shape ?? {})]);
    outsideBody.set(op, names);
  }
  return names;
}
