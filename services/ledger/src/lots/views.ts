import type { LotTerms } from './terms.ts';

/**
 * What a credit's lot adds to an earn's answer: when it becomes spendable (only when it is
 * pending) and when it expires (only when it does); the caller adds the pending amount. A card
 * with none of the lifecycle settings answers exactly as before lots.
 */
export function creditTerms(lot: LotTerms): { available_at?: string; expires_at?: string } {
  return {
    ...(lot.pending ? { available_at: lot.availableAt.toISOString() } : {}),
    ...(lot.expiresAt ? { expires_at: lot.expiresAt.toISOString() } : {}),
  };
}

/** The lot's terms in a credit's domain event (every credit event carries them). */
export function lotEventFields(lot: LotTerms) {
  return {
    pending: lot.pending,
    available_at: lot.availableAt.toISOString(),
    expires_at: lot.expiresAt?.toISOString() ?? null,
  };
}
