import createClient from 'openapi-fetch';
import { isFailure, LoyaltyApiError, LoyaltyResponseError } from './errors.ts';
import { retryingFetch, type RetryOptions } from './retry.ts';
import type { paths } from './schema.ts';

export type { components, operations, paths } from './schema.ts';
export { LoyaltyApiError, LoyaltyResponseError, type LoyaltyErrorCode, type LoyaltyFailure } from './errors.ts';
export { backoffMs, isRetrySafe, retryAfterMs, retryingFetch, type RetryOptions } from './retry.ts';
export {
  verifyWebhookSignature,
  WebhookSignatureError,
  type VerifyWebhookOptions,
  type WebhookEndpoint,
  type WebhookEvent,
} from './webhooks.ts';

export type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'patch';

/** The API paths that have an operation for `M`. */
export type PathsWith<M extends HttpMethod> = {
  [P in keyof paths]-?: undefined extends paths[P][M] ? never : P;
}[keyof paths];

/** The generated operation type of `M` on path `P`. */
export type OperationOf<P extends keyof paths, M extends HttpMethod> = Exclude<paths[P][M], undefined>;

type Get<T, K extends string> =
  T extends Record<K, infer V> ? V : T extends Partial<Record<K, infer V>> ? V | undefined : undefined;
type Parameters_<O> = Get<O, 'parameters'>;

/** `{ key: T }` when required, `{ key?: T }` when optional, `{ key?: never }` when the operation has none. */
type Slot<K extends string, T> = [Exclude<T, undefined>] extends [never]
  ? { [k in K]?: never }
  : undefined extends T
    ? { [k in K]?: Exclude<T, undefined> }
    : { [k in K]: T };

type JsonOf<T> = T extends { content: { 'application/json': infer B } } ? B : undefined;

/** Whether the operation's headers include Idempotency-Key (`never`: no headers at all). */
type AcceptsIdempotencyKey<H> = [H] extends [never] ? false : 'Idempotency-Key' extends keyof H ? true : false;

/** What a call of operation `O` takes: its query, path parameters and body, all from the generated schema. */
export type CallOptions<O> = Slot<'query', Get<Parameters_<O>, 'query'>> &
  Slot<'path', Get<Parameters_<O>, 'path'>> &
  Slot<'body', JsonOf<Get<O, 'requestBody'>>> &
  (AcceptsIdempotencyKey<Exclude<Get<Parameters_<O>, 'header'>, undefined>> extends true
    ? {
        /**
         * Sent as Idempotency-Key: a repeat with the same key answers the first outcome instead of
         * running again. With a key the SDK may retry the POST; without one it never does.
         */
        idempotencyKey?: string;
      }
    : { idempotencyKey?: never }) & {
    /** X-Member-Token for this call (overrides the client's `memberToken`). */
    memberToken?: string;
    headers?: Record<string, string>;
    signal?: AbortSignal;
  };

/** The success envelope of operation `O` (`{ success: true, data, message? }`). */
export type SuccessBody<O> = O extends { responses: { 200: { content: { 'application/json': infer E } } } } ? E : never;

/** What a successful call returns. */
export interface LoyaltyResult<O> {
  /** The envelope's `data`. */
  data: SuccessBody<O> extends { data: infer D } ? D : never;
  /** The whole success envelope (some operations carry a top-level `message` too). */
  body: SuccessBody<O>;
  /** True when the gateway answered a stored outcome for this Idempotency-Key (`Idempotent-Replayed: true`). */
  replayed: boolean;
  status: number;
  headers: Headers;
}

type ArgsOf<O> =
  Partial<CallOptions<O>> extends CallOptions<O> ? [options?: CallOptions<O>] : [options: CallOptions<O>];

export interface LoyaltyClientOptions {
  /** The gateway's origin, e.g. `https://loyalty.example.com` (paths start with /api/v1). */
  baseUrl: string;
  appId: string;
  apiKey: string;
  /** Default X-Member-Token for calls that act for a member; a call's `memberToken` wins. */
  memberToken?: string;
  /** Defaults to globalThis.fetch. */
  fetch?: (request: Request) => Promise<Response>;
  /** Retries of retry-safe requests (GET, or a request with an Idempotency-Key); `false` for none. */
  retry?: RetryOptions | false;
}

export interface LoyaltyClient {
  request<M extends HttpMethod, P extends PathsWith<M>>(
    method: M,
    path: P,
    ...args: ArgsOf<OperationOf<P, M>>
  ): Promise<LoyaltyResult<OperationOf<P, M>>>;
  get<P extends PathsWith<'get'>>(
    path: P,
    ...args: ArgsOf<OperationOf<P, 'get'>>
  ): Promise<LoyaltyResult<OperationOf<P, 'get'>>>;
  post<P extends PathsWith<'post'>>(
    path: P,
    ...args: ArgsOf<OperationOf<P, 'post'>>
  ): Promise<LoyaltyResult<OperationOf<P, 'post'>>>;
}

/** A fresh Idempotency-Key: one per logical operation (one purchase), reused for every retry of it. */
export function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

/** What the transport below sees of a call's options, whatever the operation. */
interface LooseOptions {
  query?: unknown;
  path?: unknown;
  body?: unknown;
  idempotencyKey?: string;
  memberToken?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** Any operation: the typing is done by LoyaltyClient's signatures; the transport only serializes. */
interface LooseOperation {
  parameters: { query?: Record<string, unknown>; path?: Record<string, unknown> };
  requestBody?: { content: { 'application/json': unknown } };
  responses: {
    200: { content: { 'application/json': unknown } };
    default: { content: { 'application/json': unknown } };
  };
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null ? { ...value } : undefined;
}

/**
 * A typed client of the merchant API (`/api/v1`). Paths, parameters, bodies and results are typed
 * by the schema generated from the OpenAPI document. A failure throws LoyaltyApiError (its `code`
 * is one of the catalogue's codes); an answer that is not the API's envelope throws
 * LoyaltyResponseError; a network error that outlasts the retries is thrown as it is.
 */
export function createLoyaltyClient(options: LoyaltyClientOptions): LoyaltyClient {
  const baseFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const transport = createClient<Record<string, Record<HttpMethod, LooseOperation>>>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    fetch: options.retry === false ? baseFetch : retryingFetch(baseFetch, options.retry),
    headers: { 'X-App-Id': options.appId, 'X-Api-Key': options.apiKey },
  });

  // The overload is the typed face. The JSON that comes back is taken to be what the contract's
  // response schema (hence the generated one) describes: as in any typed HTTP client, that is trust.
  function request<M extends HttpMethod, P extends PathsWith<M>>(
    method: M,
    path: P,
    ...args: ArgsOf<OperationOf<P, M>>
  ): Promise<LoyaltyResult<OperationOf<P, M>>>;
  async function request(method: HttpMethod, path: string, opts: LooseOptions = {}): Promise<unknown> {
    const headers: Record<string, string> = { ...opts.headers };
    const memberToken = opts.memberToken ?? options.memberToken;
    if (memberToken !== undefined) headers['X-Member-Token'] = memberToken;
    if (opts.idempotencyKey !== undefined) headers['Idempotency-Key'] = opts.idempotencyKey;
    const { data, error, response } = await transport.request(method, path, {
      params: { query: record(opts.query), path: record(opts.path) },
      body: opts.body,
      headers,
      signal: opts.signal,
    });
    if (!response.ok) {
      if (isFailure(error))
        throw new LoyaltyApiError(response.status, error.error, response.headers.get('x-request-id'));
      throw new LoyaltyResponseError(response.status, error);
    }
    if (typeof data !== 'object' || data === null || !('success' in data) || data.success !== true || !('data' in data))
      throw new LoyaltyResponseError(response.status, data);
    return {
      data: data.data,
      body: data,
      replayed: response.headers.get('idempotent-replayed') === 'true',
      status: response.status,
      headers: response.headers,
    };
  }

  return {
    request,
    get: (path, ...args) => request('get', path, ...args),
    post: (path, ...args) => request('post', path, ...args),
  };
}
