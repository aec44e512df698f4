import type { ServicePart } from '@loyalty/runtime';

/** What the claims service listens to: no domain events (it calls identity and the ledger). */
export function claimsConsumers(): ServicePart[] {
  return [];
}
