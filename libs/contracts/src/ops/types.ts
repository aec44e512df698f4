import type { z } from 'zod';
import type { ErrorCode } from '../errors.ts';
import type { StaffRole } from '../audit.ts';
import type { Scope } from '../messages.ts';
import type { ServiceName } from '../subjects.ts';

/**
 * One HTTP operation: everything the gateway needs to serve it and the OpenAPI generator
 * needs to document it. `operation` is the request/reply subject suffix in the owning service.
 * The schema types are kept (see `defineOperations`), so a handler registered for an operation
 * gets its input type from `params`, `query` and `body` and its output type from `response`.
 */
export interface Operation<
  P extends z.ZodObject | undefined = z.ZodObject | undefined,
  Q extends z.ZodObject | undefined = z.ZodObject | undefined,
  B extends z.ZodType | undefined = z.ZodType | undefined,
  R extends z.ZodType = z.ZodType,
> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Fastify-style path, e.g. `/api/v1/loyalty/claims/:request_id`. */
  path: string;
  service: ServiceName;
  /**
   * When a path parameter names the owning service (a job id names the service running the job):
   * the service for this call, or an AppError (a not-found) when the parameter names none. The
   * `service` field is then only the owner the reference is grouped under.
   */
  route?: (params: unknown) => ServiceName;
  /**
   * The success answer is a download (the stored bytes with their content type, streamed), not
   * the JSON envelope: the owning service answers part after part (`JobResultPart`).
   */
  download?: boolean;
  /**
   * The success answer is a file the owning service writes page by page (`DownloadPage`, each under
   * the NATS message limit), streamed: the gateway asks for the first page (its failure is the
   * answer), then for the page after each `next` cursor while the client takes what was written,
   * so neither side holds the whole file. `contentTypes` are the types a page may say it is.
   */
  pagedDownload?: { contentTypes: string[] };
  /**
   * The request body is a file (not JSON), streamed: the gateway refuses other content types
   * (415) and bodies over `maxBytes` (413), and forwards the body in pieces (`UploadChunk`, each
   * under the NATS message limit) to the owning service, which answers the last piece.
   */
  upload?: { contentTypes: string[]; maxBytes: number };
  /**
   * The success answer is `202 Accepted` (the work was queued as a job, which the answer shows),
   * not `200`.
   */
  accepted?: boolean;
  operation: string;
  scope: Scope | null;
  /**
   * `true`: an X-Member-Token is required; `'optional'`: one is resolved when sent (the handler
   * decides what it needs without one, e.g. a one-time code); `false`: none is read.
   */
  memberToken: boolean | 'optional';
  /**
   * Staff API operations (`/staff/v1`): the least role a staff token must have (`manager` may do
   * everything `staff` may). Absent on a staff table entry: a sign-in operation without a token.
   */
  staffRole?: StaffRole;
  /** The operation reads an Idempotency-Key header (those that create something or move value); others ignore it. */
  idempotent: boolean;
  summary: string;
  tag: string;
  params?: P;
  query?: Q;
  body?: B;
  /** The `data` of the success envelope. */
  response: R;
  /** The success envelope also carries a top-level `message`. */
  topLevelMessage?: boolean;
  /** Failure codes this operation can answer beyond the common ones, for the reference. */
  errors: ErrorCode[];
  /** Shown in the reference; validated against the schemas by the contract tests. */
  example?: OperationExample;
}

/** A request body (when the operation has one) and the `data` (and top-level `message`) of a success. */
export interface OperationExample {
  request?: unknown;
  response: unknown;
  message?: string;
  /** A paged download's file in another of its content types than the first (`response` is the first's). */
  byContentType?: Record<string, string>;
}

/** An operation one service offers other services over NATS (not an HTTP route). */
export interface InternalOperation<Req extends z.ZodType = z.ZodType, Rep extends z.ZodType = z.ZodType> {
  service: ServiceName;
  operation: string;
  request: Req;
  reply: Rep;
  /** The request's meta (default: `ServiceMeta`, a tenant's request). */
  meta?: z.ZodType;
}

type Out<S> = S extends z.ZodType ? z.output<S> : unknown;

/** What a handler of `O` receives: its path parameters, query and body, validated and merged. */
export type OperationInput<O extends Pick<Operation, 'params' | 'query' | 'body'>> = Out<O['params']> &
  Out<O['query']> &
  Out<O['body']>;

/** The `data` a handler of `O` answers (what the success envelope carries). */
export type OperationOutput<O extends Pick<Operation, 'response'>> = z.output<O['response']>;

export function defineOperations<const T extends Record<string, Operation>>(ops: T): T {
  return ops;
}

export function defineInternalOperations<const T extends Record<string, InternalOperation>>(ops: T): T {
  return ops;
}
