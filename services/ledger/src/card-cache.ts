import { LRUCache } from 'lru-cache';
import type { Queryable } from '@loyalty/runtime';
import { findCard, type Card } from './store/cards.ts';

/**
 * Cards as the money operations read them, kept for a short time: every earn, redemption and
 * read names a card, and its settings change rarely (operator API). The replica that changes a
 * card forgets it at once and broadcasts the change, so every other replica forgets it too; the
 * TTL bounds how long a missed broadcast (NATS reconnecting) could leave an old setting in use.
 * Only cards that exist are kept: a card created a moment ago is never hidden by a cached miss.
 */
export class CardCache {
  private readonly cards: LRUCache<number, Card> | undefined;

  constructor(
    private readonly db: Queryable,
    ttlMs: number,
    max = 10_000,
  ) {
    this.cards = ttlMs > 0 ? new LRUCache<number, Card>({ max, ttl: ttlMs }) : undefined;
  }

  /** The tenant's card, or undefined (also for another tenant's card). */
  async get(tenantId: number, cardId: number): Promise<Card | undefined> {
    const hit = this.cards?.get(cardId);
    if (hit) return hit.tenant_id === tenantId ? hit : undefined;
    const card = await findCard(this.db, tenantId, cardId);
    if (card) this.cards?.set(cardId, card);
    return card;
  }

  forget(cardId: number): void {
    this.cards?.delete(cardId);
  }
}
