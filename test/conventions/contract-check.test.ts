import { describe, expect, it } from 'vitest';
import { checkResponse } from '../support/contract.ts';

/** The harness's contract check (test/support/contract.ts) can fail: it is not a check that passes anything. */
describe('contract check of e2e responses', () => {
  const failure = (code: string) => ({ success: false, error: { code, message: 'x' } });

  it('accepts what the document says and refuses what it does not', () => {
    expect(() =>
      checkResponse('POST', '/api/v1/loyalty/claims/7/approve', 409, failure('claim_request_not_pending')),
    ).not.toThrow();
    // A code the operation does not declare for that status.
    expect(() => checkResponse('POST', '/api/v1/loyalty/claims/7/approve', 409, failure('email_taken'))).toThrow(
      /claims\.approve answered 409 not as documented/,
    );
    // A status the operation does not declare at all.
    expect(() =>
      checkResponse('GET', '/api/v1/loyalty/points/balance?card_id=1&member_id=2', 402, failure('x')),
    ).toThrow(/points\.balance answered 402/);
    // A success whose data is not the documented shape.
    expect(() =>
      checkResponse('GET', '/api/v1/loyalty/points/balance?card_id=1&member_id=2', 200, {
        success: true,
        data: { points_balance: '12' },
      }),
    ).toThrow(/points\.balance/);
    // The operator document for the operator API.
    expect(() => checkResponse('GET', '/admin/v1/tenants', 401, failure('invalid_operator_token'))).not.toThrow();
    expect(() => checkResponse('GET', '/admin/v1/tenants', 401, failure('invalid_credentials'))).toThrow();
    // No operation: not checked.
    expect(() => checkResponse('GET', '/api/v1/nowhere', 404, failure('route_not_found'))).not.toThrow();
  });
});
