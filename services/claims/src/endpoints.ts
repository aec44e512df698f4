import { claimsOperations, operationInput, type ClaimStatus, type Meta } from '@loyalty/contracts';
import { endpoint, type Endpoint } from '@loyalty/runtime';
import type { approvals } from './approval.ts';
import type { claimRequests } from './claim-requests.ts';

/** Subject -> handler table of the claims service. Handlers stay thin: validate, delegate. */
export function claimsEndpoints(
  claims: ReturnType<typeof claimRequests>,
  approval: ReturnType<typeof approvals>,
): Record<string, Endpoint<never>> {
  const o = claimsOperations;
  const table: Record<string, Endpoint<Meta>> = {
    [o['claims.request_otp'].operation]: endpoint(operationInput(o['claims.request_otp']), (d, c) =>
      claims.requestOtp(d as { member_email: string; card_id: number; reward_id?: number }, c.meta),
    ),
    [o['claims.create'].operation]: endpoint(operationInput(o['claims.create']), (d, c) =>
      claims.create(d as Parameters<typeof claims.create>[0], c.meta),
    ),
    [o['claims.list'].operation]: endpoint(operationInput(o['claims.list']), (d, c) =>
      claims.list(d as { card_id: number; status?: ClaimStatus; limit: number; offset: number }, c.meta),
    ),
    [o['claims.get'].operation]: endpoint(operationInput(o['claims.get']), (d, c) =>
      claims.get(d as { request_id: number }, c.meta),
    ),
    [o['claims.approve'].operation]: endpoint(operationInput(o['claims.approve']), (d, c) =>
      approval.approve(d as { request_id: number; staff_note?: string }, c.meta),
    ),
    [o['claims.reject'].operation]: endpoint(operationInput(o['claims.reject']), (d, c) =>
      claims.reject(d as { request_id: number; staff_note?: string }, c.meta),
    ),
  };
  return table as Record<string, Endpoint<never>>;
}
