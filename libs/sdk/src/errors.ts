import type { components } from './schema.ts';

/** Every `error.code` the API can answer: the catalogue, as the OpenAPI document's Failure schema lists it. */
export type LoyaltyErrorCode = components['schemas']['Failure']['error']['code'];

/** The failure envelope `{ success: false, error: { code, message, ... } }` of the API. */
export type LoyaltyFailure = components['schemas']['Failure'];

/**
 * A failure answered by the API: the HTTP status and the envelope's error object. `details` holds
 * the extra fields some codes carry (e.g. `fields` of `validation_error`, `retry_after_seconds` of
 * `rate_limited`, `attempts_remaining` of `invalid_otp`).
 */
export class LoyaltyApiError extends Error {
  readonly status: number;
  readonly code: LoyaltyErrorCode;
  readonly details: Record<string, unknown>;
  /** The response's X-Request-Id, to quote when asking about a failure. */
  readonly requestId: string | null;
  constructor(status: number, error: LoyaltyFailure['error'], requestId: string | null = null) {
    super(error.message);
    this.name = 'LoyaltyApiError';
    this.status = status;
    const { code, message: _message, ...details } = error;
    this.code = code;
    this.details = details;
    this.requestId = requestId;
  }
}

/**
 * An answer that is not the API's envelope (e.g. an HTML error page of a proxy in front of the
 * gateway): there is no catalogue code to report, so it is not a LoyaltyApiError.
 */
export class LoyaltyResponseError extends Error {
  readonly status: number;
  readonly body: unknown;
  constructor(status: number, body: unknown) {
    super(`Unexpected response from the loyalty API (HTTP ${status})`);
    this.name = 'LoyaltyResponseError';
    this.status = status;
    this.body = body;
  }
}

export function isFailure(body: unknown): body is LoyaltyFailure {
  if (typeof body !== 'object' || body === null || !('success' in body) || body.success !== false) return false;
  if (!('error' in body) || typeof body.error !== 'object' || body.error === null) return false;
  const error = body.error;
  return 'code' in error && typeof error.code === 'string' && 'message' in error && typeof error.message === 'string';
}
