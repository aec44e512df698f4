import type { ServicePart } from '@loyalty/runtime';

/**
 * What the ledger listens to: no domain events (other services call it, and its card changes
 * reach the other replicas through the card cache's broadcast).
 */
export function ledgerConsumers(): ServicePart[] {
  return [];
}
