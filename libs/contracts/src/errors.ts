/**
 * The error catalogue: every failure the platform can answer, with its HTTP status and a
 * default message. Services reply with a code from here; the gateway maps it to the status.
 */
export const errorCatalogue = {
  // 400: the request itself is wrong
  validation_error: { status: 400, message: 'The request is not valid.' },
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  invalid_header: { status: 400, message: 'A request header is malformed (control characters or line folding).' },
  malformed_request: { status: 400, message: 'The HTTP request is malformed.' },
  idempotency_key_required: { status: 400, message: 'This operation needs an Idempotency-Key header.' },
  // 401: credentials and tokens
  missing_credentials: { status: 401, message: 'X-App-Id and X-Api-Key headers are required.' },
  invalid_credentials: { status: 401, message: 'The application credentials are not valid.' },
  member_token_required: { status: 401, message: 'An X-Member-Token header is required.' },
  invalid_member_token: { status: 401, message: 'The member token is not valid or has expired.' },
  invalid_otp: { status: 401, message: 'The one-time code is not valid.' },
  otp_expired: { status: 401, message: 'The one-time code has expired; request a new one.' },
  otp_attempts_exceeded: { status: 401, message: 'Too many wrong tries; request a new one-time code.' },
  invalid_pin: { status: 401, message: 'The PIN is not correct.' },
  pin_required: { status: 401, message: 'This card requires the member PIN for redemption.' },
  staff_token_required: { status: 401, message: 'An Authorization: Bearer <staff token> header is required.' },
  invalid_staff_token: { status: 401, message: 'The staff token is not valid or has expired; sign in again.' },
  // 403: scope
  invalid_unsubscribe_token: { status: 400, message: 'The unsubscribe link is not valid.' },
  insufficient_scope: { status: 403, message: 'The application lacks the scope this operation needs.' },
  tenant_inactive: {
    status: 403,
    message: 'This tenant is deactivated: its apps, staff and webhooks do not work until the operator reactivates it.',
  },
  member_token_mismatch: {
    status: 403,
    message: 'The member token belongs to another member than the one this acts for.',
  },
  insufficient_role: { status: 403, message: 'Your staff role does not allow this; a manager can do it.' },
  invalid_operator_token: { status: 401, message: 'The operator token is not valid.' },
  // 404: not found (a foreign id answers exactly as a missing one)
  route_not_found: { status: 404, message: 'No such route.' },
  member_not_found: { status: 404, message: 'Member not found.' },
  tenant_not_found: { status: 404, message: 'Tenant not found.' },
  app_not_found: { status: 404, message: 'Application not found.' },
  card_not_found: { status: 404, message: 'Card not found.' },
  reward_not_found: { status: 404, message: 'Reward not found.' },
  claim_request_not_found: { status: 404, message: 'Claim request not found.' },
  referral_code_not_found: { status: 404, message: 'Referral code not found.' },
  staff_not_found: { status: 404, message: 'Staff user not found.' },
  webhook_endpoint_not_found: { status: 404, message: 'Webhook endpoint not found.' },
  webhook_delivery_not_found: { status: 404, message: 'Webhook delivery not found.' },
  rule_not_found: { status: 404, message: 'Rule not found.' },
  tiers_not_configured: { status: 404, message: 'This card has no tiers.' },
  tier_not_found: { status: 404, message: 'The card has no tier of this name.' },
  job_not_found: { status: 404, message: 'Job not found.' },
  import_not_found: { status: 404, message: 'Import not found.' },
  unknown_export: { status: 404, message: 'No such export: use journal, members, balances or lots.' },
  job_result_not_found: {
    status: 404,
    message:
      'This job has no result to download: it has not succeeded, gave none, or its result expired (kept 7 days).',
  },
  // 405: method
  method_not_allowed: { status: 405, message: 'This method is not allowed on this route.' },
  request_timeout: { status: 408, message: 'The request was not received in time.' },
  payload_too_large: { status: 413, message: 'The request body is too large.' },
  uri_too_long: { status: 414, message: 'The request path is too long.' },
  unsupported_media_type: { status: 415, message: 'Send the body as application/json.' },
  // 409: conflict / state
  email_taken: { status: 409, message: 'A member with this email already exists.' },
  phone_taken: { status: 409, message: 'A member with this phone already exists.' },
  idempotency_key_reused: { status: 409, message: 'This Idempotency-Key was used with different parameters.' },
  idempotency_in_progress: { status: 409, message: 'A request with this Idempotency-Key is still in progress.' },
  card_identifier_taken: { status: 409, message: 'A card with this unique_identifier already exists for the tenant.' },
  duplicate_reference: { status: 409, message: 'This reference was already used for an earn on this card.' },
  claim_request_not_pending: { status: 409, message: 'The claim request is not pending.' },
  referral_already_applied: { status: 409, message: 'This member already has a referral on this card.' },
  staff_email_taken: { status: 409, message: 'A staff user with this email already exists for the tenant.' },
  last_manager: { status: 409, message: 'The tenant must keep at least one active manager.' },
  webhook_endpoint_disabled: { status: 409, message: 'The webhook endpoint is disabled; enable it first.' },
  tenant_active: { status: 409, message: 'The tenant is active: deactivate it before purging it.' },
  tenant_retention_pending: {
    status: 409,
    message: 'The tenant has not been inactive for the retention period yet; purge_after says when it may be purged.',
  },
  import_not_validated: {
    status: 409,
    message: 'The import cannot be executed: it is still validating, or its file has bad lines (see its validate job).',
  },
  rule_state_conflict: { status: 409, message: 'The rule cannot do this in its current status.' },
  // 431: headers
  headers_too_large: { status: 431, message: 'The request headers are too large.' },
  // 422: business rules
  insufficient_balance: { status: 422, message: 'The cashback balance is not sufficient.' },
  insufficient_points: { status: 422, message: 'The points balance is not sufficient.' },
  wrong_card_type: { status: 422, message: 'This card does not use this reward system.' },
  reward_inactive: { status: 422, message: 'The reward is not active.' },
  invalid_verification_code: { status: 422, message: 'The verification code is missing, wrong, used or expired.' },
  self_referral: { status: 422, message: 'A member cannot refer themself.' },
  member_inactive: { status: 422, message: 'The member is not active.' },
  refund_reference_mismatch: {
    status: 422,
    message: 'The reference names a purchase of another member or on another card; nothing was refunded.',
  },
  balance_limit_exceeded: { status: 422, message: 'The credit would take the balance past its maximum.' },
  webhook_url_refused: {
    status: 422,
    message: 'The URL cannot be a webhook target (only public http or https addresses, without credentials).',
  },
  webhook_endpoint_limit: { status: 422, message: 'The tenant has as many webhook endpoints as it may have.' },
  audit_anchor_invalid: {
    status: 422,
    message: "The anchor is not one this platform signed for this tenant's audit chain.",
  },
  line_items_mismatch: {
    status: 422,
    message: 'The line items do not add up to purchase_amount (or do not match the purchase being refunded).',
  },
  unknown_import_kind: { status: 422, message: 'Unknown import kind: use members, balances, tiers or history.' },
  invalid_rule: { status: 422, message: 'The rule is not valid; fields says which fields and why.' },
  invalid_template: {
    status: 422,
    message: 'The template is not valid; fields says which field, line and column and why.',
  },
  invalid_tiers: { status: 422, message: 'The tier settings are not valid; fields says which fields and why.' },
  active_rule_limit: { status: 422, message: 'A card may have at most 100 active rules.' },
  merge_into_itself: { status: 422, message: 'A member cannot be merged into itself.' },
  transfers_disabled: { status: 422, message: 'Points transfers are not enabled on this card.' },
  transfer_limit_exceeded: {
    status: 422,
    message: "The transfer would take the member past the card's monthly transfer cap.",
  },
  invalid_time_zone: { status: 422, message: 'time_zone must be an IANA time zone name, such as Europe/Lisbon.' },
  pin_locked: { status: 423, message: 'PIN redemption is locked after repeated wrong PINs; try again later.' },
  // 429: limits
  rate_limited: { status: 429, message: 'Too many requests; slow down.' },
  otp_cooldown: { status: 429, message: 'A code was sent moments ago; wait before asking again.' },
  otp_hourly_limit: { status: 429, message: 'Too many codes requested for this email this hour.' },
  // 5xx
  internal_error: { status: 500, message: 'Something went wrong on our side.' },
  email_delivery_failed: { status: 503, message: 'The email could not be sent; try again shortly.' },
  secrets_key_missing: {
    status: 503,
    message: 'Secrets cannot be stored: identity has no SECRETS_KEY (the operator sets it in its environment).',
  },
  service_unavailable: { status: 503, message: 'The service did not answer in time; try again.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof errorCatalogue;

/** The error object of a failure envelope / failure reply. Extra fields depend on the code. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  [extra: string]: unknown;
}

/** Whether `code` is one of the catalogue's (a code read from a reply or a log). */
export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(errorCatalogue, code);
}

export function httpStatusOf(code: string): number {
  return isErrorCode(code) ? errorCatalogue[code].status : 500;
}

/**
 * A failure with a catalogue code. Thrown by domain code; the service host turns it into
 * `{ ok: false, error }`, the gateway into the failure envelope.
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;
  constructor(code: ErrorCode, message?: string, details: Record<string, unknown> = {}) {
    super(message ?? errorCatalogue[code].message);
    this.name = 'AppError';
    this.code = code;
    this.details = details;
  }
  toBody(): ErrorBody {
    return { code: this.code, message: this.message, ...this.details };
  }
}
